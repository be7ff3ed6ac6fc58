package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/platform-operator/deploy"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/website"
)

// clusterAPIs is what discovery reports of the resources that the embedded
// roles name: all served, the review APIs and namespaces cluster-scoped.
var clusterAPIs = func() servedAPIs {
	s := servedAPIs{resources: map[schema.GroupVersion]map[string]metav1.APIResource{}}
	clusterScoped := []string{"tokenreviews", "subjectaccessreviews", "namespaces"}
	add := func(group, resource string) {
		gv := schema.GroupVersion{Group: group, Version: "v1"}
		if s.resources[gv] == nil {
			s.resources[gv] = map[string]metav1.APIResource{}
		}
		s.resources[gv][resource] = metav1.APIResource{Name: resource, Namespaced: !slices.Contains(clusterScoped, resource)}
	}
	add("", "namespaces")
	for _, component := range []string{deploy.BaseComponent, "website"} {
		cluster, own, err := deploy.Rules(component)
		if err != nil {
			panic(err)
		}
		for _, rule := range append(cluster, own...) {
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					resource, _, _ = strings.Cut(resource, "/")
					add(group, resource)
				}
			}
		}
	}
	return s
}()

// checksIn counts the checks that the rules of a component make.
func checksIn(t *testing.T, component string) (cluster, own int) {
	t.Helper()
	clusterRules, ownRules, err := deploy.Rules(component)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range clusterRules {
		cluster += len(expandRule(r, component))
	}
	for _, r := range ownRules {
		own += len(expandRule(r, component))
	}
	return cluster, own
}

func checkTexts(checks []accessCheck) []string {
	var out []string
	for _, c := range checks {
		out = append(out, c.String())
	}
	return out
}

// The checks come from the roles embedded from deploy/, which controller-gen
// generates from the RBAC markers: what the installation grants is what the
// operator asks for, no more and no less.
func TestPermissionChecksFromTheEmbeddedRoles(t *testing.T) {
	websiteOnly := []controller.Descriptor{website.Descriptor()}
	baseCluster, baseOwn := checksIn(t, deploy.BaseComponent)
	websiteCluster, _ := checksIn(t, "website")
	tests := []struct {
		name      string
		scope     permissionScope
		want      []string
		wantNot   []string
		wantCount int
	}{
		{
			name:  "all namespaces, no leader election",
			scope: permissionScope{},
			want: []string{
				"create tokenreviews.authentication.k8s.io (cluster-wide)",
				"create subjectaccessreviews.authorization.k8s.io (cluster-wide)",
				"list deployments.apps in all namespaces",
				"patch websites/status.example.com in all namespaces",
				"update websites/finalizers.example.com in all namespaces",
				"create events.events.k8s.io in all namespaces",
				"delete ingresses.networking.k8s.io in all namespaces",
			},
			wantNot:   []string{"update leases.coordination.k8s.io in namespace platform-operator-system"},
			wantCount: baseCluster + websiteCluster,
		},
		{
			name:  "leader election: the Lease and its events in the Lease's namespace",
			scope: permissionScope{leaseNamespace: "ops"},
			want: []string{
				"get leases.coordination.k8s.io in namespace ops",
				"update leases.coordination.k8s.io in namespace ops",
				"create events in namespace ops",
				"patch events in namespace ops",
			},
			wantCount: baseCluster + baseOwn + websiteCluster,
		},
		{
			name:  "some namespaces",
			scope: permissionScope{namespaces: []string{"a", "b"}},
			want: []string{
				"create tokenreviews.authentication.k8s.io (cluster-wide)",
				"watch pods in namespace a",
				"watch pods in namespace b",
				"patch websites/status.example.com in namespace b",
			},
			wantNot:   []string{"watch pods in all namespaces"},
			wantCount: baseCluster + 2*websiteCluster,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			checks, err := permissionChecks(deploy.Rules, websiteOnly, tt.scope, clusterAPIs)
			g.Expect(err).NotTo(HaveOccurred())
			texts := checkTexts(checks)
			for _, w := range tt.want {
				g.Expect(texts).To(ContainElement(w))
			}
			for _, w := range tt.wantNot {
				g.Expect(texts).NotTo(ContainElement(w))
			}
			g.Expect(checks).To(HaveLen(tt.wantCount), "%v", texts)
		})
	}
}

// Every verb of every rule of the base and Website roles is checked.
func TestPermissionChecksCoverEveryRule(t *testing.T) {
	g := NewWithT(t)
	checks, err := permissionChecks(deploy.Rules, []controller.Descriptor{website.Descriptor()}, permissionScope{leaseNamespace: "ops"}, clusterAPIs)
	g.Expect(err).NotTo(HaveOccurred())
	for _, component := range []string{deploy.BaseComponent, "website"} {
		cluster, own, err := deploy.Rules(component)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(append(cluster, own...)).NotTo(BeEmpty(), component)
		for _, rule := range append(cluster, own...) {
			for _, c := range expandRule(rule, component) {
				g.Expect(slices.ContainsFunc(checks, func(got accessCheck) bool {
					a, b := got.attributes, c.attributes
					return a.Verb == b.Verb && a.Group == b.Group && a.Resource == b.Resource && a.Subresource == b.Subresource
				})).To(BeTrue(), "%s of %s is not checked", c, component)
			}
		}
	}
}

// A rule with resource names is checked for each name; a rule on an API the
// cluster does not serve (an optional one) is not checked; a cluster-scoped
// resource is checked cluster-wide even when the operator watches some
// namespaces.
func TestPermissionChecksOfOtherRules(t *testing.T) {
	g := NewWithT(t)
	roles := func(component string) (cluster, own []rbacv1.PolicyRule, err error) {
		if component == deploy.BaseComponent {
			return nil, []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"update"}, ResourceNames: []string{"lease-a", "lease-b"}}}, nil
		}
		return []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create"}},
			{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots"}, Verbs: []string{"create"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}, ResourceNames: []string{"one"}},
		}, nil, nil
	}
	checks, err := permissionChecks(roles, []controller.Descriptor{{Name: "tenant"}},
		permissionScope{namespaces: []string{"a"}, leaseNamespace: "ops"}, clusterAPIs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(checkTexts(checks)).To(ConsistOf(
		"update leases.coordination.k8s.io lease-a in namespace ops",
		"update leases.coordination.k8s.io lease-b in namespace ops",
		"create namespaces (cluster-wide)",
		"get deployments.apps one in namespace a",
	))
}

// fakeReviewer is an authorizer that denies what it lists, as "verb
// group/resource/subresource namespace", and allows the rest.
type fakeReviewer struct {
	denied  []string
	reviews int
}

func (f *fakeReviewer) Create(_ context.Context, review *authorizationv1.SelfSubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error) {
	f.reviews++
	a := review.Spec.ResourceAttributes
	key := fmt.Sprintf("%s %s/%s/%s %s", a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace)
	review.Status.Allowed = !slices.Contains(f.denied, strings.TrimSpace(key))
	return review, nil
}

func TestCheckPermissionsNamesEachMissingOne(t *testing.T) {
	g := NewWithT(t)
	checks, err := permissionChecks(deploy.Rules, []controller.Descriptor{website.Descriptor()}, permissionScope{leaseNamespace: "ops"}, clusterAPIs)
	g.Expect(err).NotTo(HaveOccurred())

	all := &fakeReviewer{}
	g.Expect(checkPermissions(t.Context(), all, checks)).To(Succeed())
	g.Expect(all.reviews).To(Equal(len(checks)))

	weak := &fakeReviewer{denied: []string{
		"list apps/deployments/",
		"patch example.com/websites/status",
		"update coordination.k8s.io/leases/ ops",
	}}
	err = checkPermissions(t.Context(), weak, checks)
	g.Expect(err).To(MatchError("RBAC (403 Forbidden): the operator may not update leases.coordination.k8s.io in namespace ops, " +
		"list deployments.apps in all namespaces, patch websites/status.example.com in all namespaces; " +
		"grant it what deploy/base/role.yaml and deploy/components/website/role.yaml grant"))
}

// Least privilege for what every installation and the Website component
// grant: never Secrets, never writes to pods, never the verbs that lift
// privileges. (Tenants will need to bind roles; that stays in their
// component.)
func TestBaseAndWebsiteRolesGrantNothingDangerous(t *testing.T) {
	for _, component := range []string{deploy.BaseComponent, "website"} {
		cluster, own, err := deploy.Rules(component)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append(cluster, own...) {
			for _, res := range r.Resources {
				if res == "secrets" || res == "*" {
					t.Errorf("%s grants access to %s: %+v", component, res, r)
				}
				if res == "pods" && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					t.Errorf("%s grants writes to pods: %+v", component, r)
				}
			}
			for _, verb := range r.Verbs {
				if slices.Contains([]string{"escalate", "bind", "impersonate", "*"}, verb) {
					t.Errorf("%s grants %s: %+v", component, verb, r)
				}
			}
		}
	}
}
