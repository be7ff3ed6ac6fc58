package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/platform-operator/deploy"
	"example.com/platform-operator/internal/controller"
)

// accessCheck is one thing the operator must be allowed to do, asked of the
// API server with a SelfSubjectAccessReview.
type accessCheck struct {
	attributes authorizationv1.ResourceAttributes
	// path is set instead of attributes for a non-resource URL.
	path string
	verb string
	// clusterScoped resources are checked once, without a namespace.
	clusterScoped bool
	// component is the deploy/ component whose role grants it.
	component string
}

// permissionScope is where the operator works: the namespaces it watches
// (none: all) and, with leader election, the namespace of its Lease.
type permissionScope struct {
	namespaces []string
	// leaseNamespace is "" without --leader-elect: then the rules of the
	// operator's own namespace (the Lease and the events about it) are not
	// needed.
	leaseNamespace string
}

// permissionChecks turns the roles that controller-gen generates from the
// RBAC markers, embedded in the binary, into the checks to make: the base
// role's, which every installation needs, and those of the component of
// each controller that runs. A component's cluster rules are checked in
// every namespace the operator watches (or cluster-wide), its own-namespace
// rules in the Lease's namespace. Rules on resources the API server does not
// serve (an optional API that is absent) are left out: nothing can use them.
//
// rulesOf is deploy.Rules but in tests.
func permissionChecks(rulesOf func(component string) (cluster, own []rbacv1.PolicyRule, err error),
	controllers []controller.Descriptor, scope permissionScope, served servedAPIs) ([]accessCheck, error) {
	components := []string{deploy.BaseComponent}
	for _, d := range controllers {
		components = append(components, d.Name)
	}
	var checks []accessCheck
	seen := map[accessCheck]bool{}
	add := func(c accessCheck) {
		key := c
		key.component = ""
		if !seen[key] {
			seen[key] = true
			checks = append(checks, c)
		}
	}
	for _, component := range components {
		cluster, own, err := rulesOf(component)
		if err != nil {
			return nil, fmt.Errorf("read the permissions of %s: %w", component, err)
		}
		for _, rule := range cluster {
			for _, c := range expandRule(rule, component) {
				if c.path != "" {
					add(c)
					continue
				}
				namespaced, known := served.namespaced(schema.GroupResource{Group: c.attributes.Group, Resource: c.attributes.Resource})
				switch {
				case !known && component != deploy.BaseComponent:
				case !namespaced || component == deploy.BaseComponent || len(scope.namespaces) == 0:
					// The base role's cluster rules (token and access
					// reviews) are needed cluster-wide whatever the scope.
					c.clusterScoped = !namespaced
					add(c)
				default:
					for _, ns := range scope.namespaces {
						c.attributes.Namespace = ns
						add(c)
					}
				}
			}
		}
		if scope.leaseNamespace == "" {
			continue
		}
		for _, rule := range own {
			for _, c := range expandRule(rule, component) {
				c.attributes.Namespace = scope.leaseNamespace
				add(c)
			}
		}
	}
	return checks, nil
}

// expandRule makes one check per verb, resource and resource name of a
// policy rule.
func expandRule(rule rbacv1.PolicyRule, component string) []accessCheck {
	var checks []accessCheck
	for _, verb := range rule.Verbs {
		for _, path := range rule.NonResourceURLs {
			checks = append(checks, accessCheck{path: path, verb: verb, clusterScoped: true, component: component})
		}
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				resource, subresource, _ := strings.Cut(resource, "/")
				for _, name := range names {
					checks = append(checks, accessCheck{
						attributes: authorizationv1.ResourceAttributes{
							Verb: verb, Group: group, Resource: resource, Subresource: subresource, Name: name,
						},
						verb:      verb,
						component: component,
					})
				}
			}
		}
	}
	return checks
}

// accessReviewer is the one call of the authorization API the checks make.
type accessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// checkPermissions asks the API server about each check and returns one
// error that names every permission missing, and the roles that grant them.
func checkPermissions(ctx context.Context, reviewer accessReviewer, checks []accessCheck) error {
	var missing, roles []string
	for _, c := range checks {
		review := &authorizationv1.SelfSubjectAccessReview{}
		if c.path != "" {
			review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: c.path, Verb: c.verb}
		} else {
			review.Spec.ResourceAttributes = &c.attributes
		}
		result, err := reviewer.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("check RBAC permissions: %w", err)
		}
		if result.Status.Allowed {
			continue
		}
		missing = append(missing, c.String())
		role := "deploy/components/" + c.component + "/role.yaml"
		if c.component == deploy.BaseComponent {
			role = "deploy/base/role.yaml"
		}
		if !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("RBAC (403 Forbidden): the operator may not %s; grant it what %s grant",
			strings.Join(missing, ", "), strings.Join(roles, " and "))
	}
	return nil
}

// String says what the check asks, as a person would: "list
// deployments.apps in all namespaces".
func (c accessCheck) String() string {
	if c.path != "" {
		return fmt.Sprintf("%s %s", c.verb, c.path)
	}
	a := c.attributes
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Group != "" {
		resource += "." + a.Group
	}
	if a.Name != "" {
		resource += " " + a.Name
	}
	switch {
	case c.clusterScoped:
		return fmt.Sprintf("%s %s (cluster-wide)", a.Verb, resource)
	case a.Namespace == "":
		return fmt.Sprintf("%s %s in all namespaces", a.Verb, resource)
	default:
		return fmt.Sprintf("%s %s in namespace %s", a.Verb, resource, a.Namespace)
	}
}
