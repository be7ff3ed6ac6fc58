package operator

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"example.com/platform-operator/deploy"
)

// preflight makes the start-up checks in the order a person fixes what
// they find: the API server answers (waited for, however long), the APIs of
// the selected controllers are served (deciding which run), and the
// operator has every permission that the roles of deploy/ grant for them.
// Each error is one line that names the cause and the fix. It tells probes
// what it is doing, for /readyz to say. It returns what runs and the Lease's
// namespace ("" without leader election).
func preflight(ctx context.Context, opts Options, host string, discoveryClient discovery.DiscoveryInterfaceWithContext,
	reviewer accessReviewer, probes *probes, log logr.Logger) (plan, string, error) {
	probes.starting("waiting for the API server at " + host)
	if err := waitForAPIServer(ctx, discoveryClient, host, clock.RealClock{}, probes.starting, log); err != nil {
		return plan{}, "", err
	}

	probes.starting("discovering the APIs the cluster serves")
	served, err := discoverAPIs(ctx, discoveryClient)
	if err != nil {
		return plan{}, "", err
	}
	sel, err := selectControllers(registry, opts.Controllers)
	if err != nil {
		return plan{}, "", err
	}
	p, err := planControllers(sel, served, opts.Namespaces)
	if err != nil {
		return plan{}, "", err
	}
	for _, s := range p.skipped {
		log.Info("Skipping controller", "controller", s.name, "reason", s.reason)
	}
	for _, d := range p.run {
		for _, gvr := range d.OptionalAPIs {
			if !p.servedOptional[d.Name][gvr] {
				log.Info("Optional API not served: the controller runs without it", "controller", d.Name, "api", describeResource(gvr))
			}
		}
	}

	probes.starting("checking permissions")
	leaseNS, err := leaseNamespace(opts)
	if err != nil {
		return plan{}, "", err
	}
	checks, err := permissionChecks(deploy.Rules, p.run, permissionScope{namespaces: opts.Namespaces, leaseNamespace: leaseNS}, served)
	if err != nil {
		return plan{}, "", err
	}
	if err := checkPermissions(ctx, reviewer, checks); err != nil {
		return plan{}, "", err
	}
	return p, leaseNS, nil
}

// describeResource names a resource as kubectl does, with its version:
// volumesnapshots.snapshot.storage.k8s.io/v1.
func describeResource(gvr schema.GroupVersionResource) string {
	name := gvr.Resource
	if gvr.Group != "" {
		name += "." + gvr.Group
	}
	return name + "/" + gvr.Version
}
