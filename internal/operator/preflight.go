package operator

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// permission is one thing the operator must be allowed to do.
type permission struct {
	group, resource, subresource string
	verbs                        []string
	// clusterScoped permissions are checked once, not per namespace.
	clusterScoped bool
}

// requiredPermissions is what the reconciler and the metrics endpoint need,
// as the RBAC markers of internal/controller grant it in deploy/rbac.yaml. A
// test checks that the two agree.
var requiredPermissions = []permission{
	{group: websitev1.GroupVersion.Group, resource: "websites", verbs: []string{"get", "list", "watch"}},
	{group: websitev1.GroupVersion.Group, resource: "websites", subresource: "status", verbs: []string{"patch"}},
	{group: websitev1.GroupVersion.Group, resource: "websites", subresource: "finalizers", verbs: []string{"update"}},
	{group: "apps", resource: "deployments", verbs: []string{"get", "list", "watch", "create", "patch"}},
	{group: "", resource: "services", verbs: []string{"get", "list", "watch", "create", "patch"}},
	{group: "networking.k8s.io", resource: "ingresses", verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{group: "", resource: "pods", verbs: []string{"get", "list", "watch"}},
	{group: "events.k8s.io", resource: "events", verbs: []string{"create", "patch"}},
	{group: "authentication.k8s.io", resource: "tokenreviews", verbs: []string{"create"}, clusterScoped: true},
	{group: "authorization.k8s.io", resource: "subjectaccessreviews", verbs: []string{"create"}, clusterScoped: true},
}

// leaderElectionPermission is needed in the Lease's namespace when
// --leader-elect is set.
var leaderElectionPermission = permission{group: "coordination.k8s.io", resource: "leases", verbs: []string{"get", "create", "update"}}

// preflight checks, before anything starts, the three causes of a failed
// start that the tutorial lists: the API server cannot be reached, the
// Website API is not installed (or is the tutorial's CRD, without the
// status and scale subresources), and RBAC misses a rule. Each error is one
// line that names the cause and the fix.
// preflightClients are the only API clients the checks need; the full
// clientset of every API group would add megabytes to the binary.
type preflightClients struct {
	discovery     discovery.DiscoveryInterface
	authorization authorizationv1client.AuthorizationV1Interface
}

func preflight(ctx context.Context, clientset preflightClients, host string, opts Options, log logr.Logger) error {
	if err := reachAPIServer(ctx, clientset, host, opts.WaitForAPIServer, log); err != nil {
		return err
	}
	if err := checkWebsiteAPI(clientset); err != nil {
		return err
	}
	return checkPermissions(ctx, clientset, opts)
}

// reachAPIServer asks the API server for its version, once, or with
// --wait-for-api-server until it answers, backing off to one try every 5 s:
// cheap during a long outage, quick to notice its end.
func reachAPIServer(ctx context.Context, clientset preflightClients, host string, wait bool, log logr.Logger) error {
	delay := time.Second
	for {
		_, err := clientset.discovery.ServerVersion()
		if err == nil {
			return nil
		}
		err = describeConnectionError(host, err)
		if !wait || apierrors.IsUnauthorized(errors.Unwrap(err)) {
			return err
		}
		log.Info("Waiting for the API server", "error", err.Error(), "retryIn", delay.String())
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func describeConnectionError(host string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the operator's credentials (401 Unauthorized): check the token or certificate of the kubeconfig", host)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server at %s refused to tell its version (403 Forbidden): %v", host, err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return fmt.Errorf("cannot reach the API server at %s: %v", host, err)
}

func checkWebsiteAPI(clientset preflightClients) error {
	gv := websitev1.GroupVersion.String()
	resources, err := clientset.discovery.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the Website API (%s, websites) is not installed in this cluster: apply deploy/crd.yaml first", gv)
	}
	if err != nil {
		return fmt.Errorf("discover the Website API %s: %w", gv, err)
	}
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
	}
	if !slices.Contains(names, "websites") {
		return fmt.Errorf("the API group %s has no websites resource: apply deploy/crd.yaml first", gv)
	}
	for _, sub := range []string{"status", "scale"} {
		if !slices.Contains(names, "websites/"+sub) {
			return fmt.Errorf("the installed websites.example.com CRD has no %s subresource (is it the tutorial's crd.yaml?): apply deploy/crd.yaml, which keeps every existing Website", sub)
		}
	}
	return nil
}

// checkPermissions asks the API server, with SelfSubjectAccessReviews, for
// each permission the operator needs, in each namespace it watches.
func checkPermissions(ctx context.Context, clientset preflightClients, opts Options) error {
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	type check struct {
		p         permission
		namespace string
	}
	var checks []check
	for _, p := range requiredPermissions {
		if p.clusterScoped {
			checks = append(checks, check{p, ""})
			continue
		}
		for _, ns := range namespaces {
			checks = append(checks, check{p, ns})
		}
	}
	if opts.LeaderElect && opts.LeaderElectionNamespace != "" {
		checks = append(checks, check{leaderElectionPermission, opts.LeaderElectionNamespace})
	}

	var missing []string
	for _, c := range checks {
		for _, verb := range c.p.verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace:   c.namespace,
					Verb:        verb,
					Group:       c.p.group,
					Resource:    c.p.resource,
					Subresource: c.p.subresource,
				},
			}}
			result, err := clientset.authorization.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("check RBAC permissions: %w", err)
			}
			if !result.Status.Allowed {
				missing = append(missing, describePermission(verb, c.p, c.namespace))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("RBAC (403 Forbidden): the operator may not %s; grant it in its Role or ClusterRole as deploy/rbac.yaml does",
			strings.Join(missing, ", "))
	}
	return nil
}

func describePermission(verb string, p permission, namespace string) string {
	resource := p.resource
	if p.subresource != "" {
		resource += "/" + p.subresource
	}
	if p.group != "" {
		resource += "." + p.group
	}
	where := "in all namespaces"
	switch {
	case p.clusterScoped:
		where = "(cluster-wide)"
	case namespace != "":
		where = "in namespace " + namespace
	}
	return fmt.Sprintf("%s %s %s", verb, resource, where)
}
