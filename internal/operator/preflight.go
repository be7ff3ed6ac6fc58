package operator

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"example.com/platform-operator/deploy"
	"example.com/platform-operator/internal/podsecurity"
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
	serverVersion, err := waitForAPIServer(ctx, discoveryClient, host, clock.RealClock{}, probes.starting, log)
	if err != nil {
		return plan{}, "", err
	}

	probes.starting("discovering the APIs the cluster serves")
	sel, err := selectControllers(registry, opts.Controllers)
	if err != nil {
		return plan{}, "", err
	}
	served, err := discoverControllerAPIs(ctx, discoveryClient, sel, log)
	if err != nil {
		return plan{}, "", err
	}
	p, err := planControllers(sel, served, opts.Namespaces)
	if err != nil {
		return plan{}, "", err
	}
	p.podSecurity = podsecurity.VersionOf(serverVersion.GitVersion)
	log.V(1).Info("Pods the operator makes are judged by the restricted Pod Security Standard",
		"apiServerVersion", serverVersion.GitVersion, "podSecurityVersion", p.podSecurity.String())
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

// An API server that has just started answers discovery before it has
// registered the CRDs: in the outage scenario a leader that restarted a
// second after kube-apiserver came back found none of its three CRDs, and
// exited with "no controller to run". So while discovery lists the
// resource of no selected controller, the start asks again, for up to
// discoveryGrace. It does not wait when some are listed: a cluster may hold
// only some of the components for good, and every start would pay the
// wait. Installing the operator before any of its CRDs costs it once.
var (
	discoveryGrace = 10 * time.Second
	discoveryRetry = time.Second
)

// discoverControllerAPIs is discoverAPIs, asked again every discoveryRetry
// for up to discoveryGrace while no selected controller's resource is
// served; after the grace it returns what discovery last listed.
func discoverControllerAPIs(ctx context.Context, client discovery.ServerResourcesInterfaceWithContext, sel selection,
	log logr.Logger) (servedAPIs, error) {
	var served servedAPIs
	answers := 0
	err := wait.PollUntilContextTimeout(ctx, discoveryRetry, discoveryGrace, true, func(ctx context.Context) (bool, error) {
		var err error
		if served, err = discoverAPIs(ctx, client); err != nil {
			return false, err
		}
		ready := anyResourceServed(sel, served)
		if answers++; answers == 1 && !ready {
			log.Info("Waiting for the API server to serve the resource of any selected controller", "upTo", discoveryGrace.String())
		}
		return ready, nil
	})
	switch {
	case ctx.Err() != nil:
		return servedAPIs{}, ctx.Err()
	case err != nil && !wait.Interrupted(err):
		return servedAPIs{}, err
	}
	return served, nil
}

// anyResourceServed tells whether discovery lists the resource of a selected
// controller, or could not tell (a failed group is reported on its own).
func anyResourceServed(sel selection, served servedAPIs) bool {
	for _, d := range sel.enabled {
		if _, failed := served.failed[d.Resource.GroupVersion()]; failed {
			return true
		}
		if _, ok := served.resource(d.Resource); ok {
			return true
		}
	}
	return false
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
