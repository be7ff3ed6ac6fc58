package tenant

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// decode turns an apply configuration into the typed object it describes.
func decode[T any](t *testing.T, config any) *T {
	t.Helper()
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// testTenant is a Tenant with two namespaces and one owner; options change
// it.
func testTenant(opts ...func(*tenantv1.Tenant)) *tenantv1.Tenant {
	t := &tenantv1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "uid-1", Generation: 3},
		Spec: tenantv1.TenantSpec{
			Namespaces: []string{"team-a", "team-a-dev"},
			Owners:     []tenantv1.TenantSubject{{Kind: tenantv1.UserSubject, Name: "alice"}},
		},
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

func withServiceAccount(t *tenantv1.Tenant) { t.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{} }

func withCredentials(t *tenantv1.Tenant) {
	withServiceAccount(t)
	t.Spec.Credentials = &tenantv1.TenantCredentials{}
}

func TestDesiredNamespaceIsLabelledNotOwned(t *testing.T) {
	g := NewWithT(t)
	tn := testTenant(func(t *tenantv1.Tenant) { t.Spec.PodSecurity = tenantv1.BaselinePodSecurity })

	ns := decode[corev1.Namespace](t, DesiredNamespace(tn, "team-a-dev"))

	g.Expect(ns.Name).To(Equal("team-a-dev"))
	g.Expect(ns.OwnerReferences).To(BeEmpty(), "no cascade may delete a tenant's data")
	g.Expect(ns.Labels).To(Equal(map[string]string{
		"app.kubernetes.io/managed-by":               "platform-operator",
		tenantv1.TenantLabel:                         "team-a",
		"pod-security.kubernetes.io/enforce":         "baseline",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "baseline",
		"pod-security.kubernetes.io/audit":           "baseline",
	}))
	g.Expect(decode[corev1.Namespace](t, DesiredNamespace(testTenant(), "x")).Labels).
		To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"), "restricted by default")
}

func TestNamespaceOwnershipGoesByLabel(t *testing.T) {
	g := NewWithT(t)
	tn := testTenant()
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	managed := "app.kubernetes.io/managed-by"

	g.Expect(holdsNamespace(tn)(ns(map[string]string{managed: "platform-operator", tenantv1.TenantLabel: "team-a"}))).To(BeTrue())
	g.Expect(holdsNamespace(tn)(ns(map[string]string{tenantv1.TenantLabel: "team-a"}))).To(BeFalse(), "someone else's label alone")
	g.Expect(holdsNamespace(tn)(ns(map[string]string{managed: "platform-operator", tenantv1.TenantLabel: "team-b"}))).To(BeFalse())

	g.Expect(mayAdoptNamespace(tn)(ns(map[string]string{tenantv1.TenantAdoptLabel: "team-a"}))).To(BeTrue())
	g.Expect(mayAdoptNamespace(tn)(ns(map[string]string{tenantv1.TenantAdoptLabel: "team-b"}))).To(BeFalse())
	g.Expect(mayAdoptNamespace(tn)(ns(nil))).To(BeFalse())
	g.Expect(mayAdoptNamespace(tn)(ns(map[string]string{tenantv1.TenantAdoptLabel: "team-a", tenantv1.TenantLabel: "team-b"}))).
		To(BeFalse(), "a namespace another Tenant holds is never adopted")
}

func TestDesiredRoleBinding(t *testing.T) {
	g := NewWithT(t)
	tn := testTenant(withServiceAccount, func(t *tenantv1.Tenant) {
		t.Spec.OwnerRole = "edit"
		t.Spec.Owners = append(t.Spec.Owners,
			tenantv1.TenantSubject{Kind: tenantv1.GroupSubject, Name: "devs"},
			tenantv1.TenantSubject{Kind: tenantv1.ServiceAccountSubject, Name: "ci", Namespace: "tools"})
	})

	rb := decode[rbacv1.RoleBinding](t, DesiredRoleBinding(tn, "team-a-dev", true))

	g.Expect(rb.Name).To(Equal("tenant-edit"))
	g.Expect(rb.Namespace).To(Equal("team-a-dev"))
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "devs"},
		{Kind: "ServiceAccount", Name: "ci", Namespace: "tools"},
		{Kind: "ServiceAccount", Name: "tenant", Namespace: "team-a"},
	}))
	g.Expect(rb.OwnerReferences).To(ConsistOf(HaveField("UID", tn.UID)))
	g.Expect(rb.OwnerReferences[0].Controller).To(HaveValue(BeTrue()))
	g.Expect(rb.OwnerReferences[0].Kind).To(Equal("Tenant"))
	g.Expect(rb.OwnerReferences[0].APIVersion).To(Equal("example.com/v1alpha1"))
	g.Expect(rb.Labels).To(HaveKeyWithValue(tenantv1.TenantLabel, "team-a"))

	g.Expect(DesiredRoleBinding(testTenant(func(t *tenantv1.Tenant) { t.Spec.Owners = nil }), "x", true)).
		To(BeNil(), "nobody to bind, no RoleBinding")
	g.Expect(decode[rbacv1.RoleBinding](t, DesiredRoleBinding(testTenant(), "x", true)).RoleRef.Name).To(Equal("admin"), "admin by default")

	notHeld := decode[rbacv1.RoleBinding](t, DesiredRoleBinding(tn, "team-a-dev", false))
	g.Expect(notHeld.Subjects).NotTo(ContainElement(HaveField("Name", "tenant")),
		"a ServiceAccount that does not exist yet, or is not the Tenant's, is not bound")
	g.Expect(notHeld.Subjects).To(HaveLen(3), "the owners still are")
	g.Expect(DesiredRoleBinding(testTenant(withServiceAccount, func(t *tenantv1.Tenant) { t.Spec.Owners = nil }), "x", false)).
		To(BeNil(), "a ServiceAccount not held is nobody to bind")

	defaultSA := testTenant(func(t *tenantv1.Tenant) { t.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{Name: "default"} })
	g.Expect(decode[rbacv1.RoleBinding](t, DesiredRoleBinding(defaultSA, "x", true)).Subjects).
		NotTo(ContainElement(HaveField("Name", "default")), "default is never bound, even when held")
}

func TestDesiredServiceAccount(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DesiredServiceAccount(testTenant())).To(BeNil(), "none unless asked for")

	sa := decode[corev1.ServiceAccount](t, DesiredServiceAccount(testTenant(func(t *tenantv1.Tenant) {
		t.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{Name: "ci"}
	})))
	g.Expect(sa.Name).To(Equal("ci"))
	g.Expect(sa.Namespace).To(Equal("team-a"), "in the home namespace")
	g.Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	g.Expect(sa.OwnerReferences).To(HaveLen(1))

	g.Expect(DesiredServiceAccount(testTenant(func(t *tenantv1.Tenant) {
		t.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{Name: "default"}
	}))).To(BeNil(), "default, the ServiceAccount of every pod, is never made")
}

func TestDesiredQuotaAndLimitRange(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DesiredResourceQuota(testTenant(), "team-a")).To(BeNil())
	g.Expect(DesiredLimitRange(testTenant(), "team-a")).To(BeNil())

	tn := testTenant(func(t *tenantv1.Tenant) {
		t.Spec.Quota = &tenantv1.TenantQuota{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
			TenantContainerDefaults: &tenantv1.TenantContainerDefaults{
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
		}
	})
	quota := decode[corev1.ResourceQuota](t, DesiredResourceQuota(tn, "team-a-dev"))
	g.Expect(quota.Name).To(Equal("tenant-quota"))
	g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("10"))
	g.Expect(quota.OwnerReferences).To(HaveLen(1))

	lr := decode[corev1.LimitRange](t, DesiredLimitRange(tn, "team-a-dev"))
	g.Expect(lr.Spec.Limits).To(HaveLen(1))
	g.Expect(lr.Spec.Limits[0].Type).To(Equal(corev1.LimitTypeContainer))
	g.Expect(lr.Spec.Limits[0].DefaultRequest.Cpu().String()).To(Equal("100m"))
	g.Expect(lr.Spec.Limits[0].Default).To(BeEmpty())
}

func TestDesiredNetworkPolicyAdmitsOnlyTheTenantsNamespaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DesiredNetworkPolicy(testTenant(func(t *tenantv1.Tenant) { t.Spec.Isolation = tenantv1.NoIsolation }), "team-a", []string{"team-a"})).To(BeNil())

	np := decode[networkingv1.NetworkPolicy](t, DesiredNetworkPolicy(testTenant(), "team-a", []string{"team-a", "team-a-dev"}))
	g.Expect(np.Spec.PodSelector).To(Equal(metav1.LabelSelector{}), "every pod")
	g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}), "outgoing traffic is not restricted")
	g.Expect(np.Spec.Ingress).To(HaveLen(1))
	g.Expect(np.Spec.Ingress[0].From).To(HaveLen(1))
	peer := np.Spec.Ingress[0].From[0]
	g.Expect(peer.PodSelector).To(BeNil())
	g.Expect(peer.NamespaceSelector.MatchLabels).To(BeEmpty(), "no label a person could add")
	g.Expect(peer.NamespaceSelector.MatchExpressions).To(Equal([]metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"team-a", "team-a-dev"},
	}}))
}

// Each child, as the API server stores it from its builder, matches its
// desired state: a restarted operator, which compares every child once,
// finds nothing to put back.
func TestChildrenAsBuiltShowNoDrift(t *testing.T) {
	tn := testTenant(withServiceAccount, func(t *tenantv1.Tenant) {
		t.Spec.Quota = &tenantv1.TenantQuota{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("0.5")},
			TenantContainerDefaults: &tenantv1.TenantContainerDefaults{
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
		}
	})
	for name, tc := range map[string]struct {
		desired runtime.ApplyConfiguration
		live    client.Object
	}{
		"namespace":       {DesiredNamespace(tn, "team-a"), decode[corev1.Namespace](t, DesiredNamespace(tn, "team-a"))},
		"role binding":    {DesiredRoleBinding(tn, "team-a", true), decode[rbacv1.RoleBinding](t, DesiredRoleBinding(tn, "team-a", true))},
		"service account": {DesiredServiceAccount(tn), decode[corev1.ServiceAccount](t, DesiredServiceAccount(tn))},
		"quota":           {DesiredResourceQuota(tn, "team-a"), decode[corev1.ResourceQuota](t, DesiredResourceQuota(tn, "team-a"))},
		"limit range":     {DesiredLimitRange(tn, "team-a"), decode[corev1.LimitRange](t, DesiredLimitRange(tn, "team-a"))},
		"network policy": {DesiredNetworkPolicy(tn, "team-a", tn.Spec.Namespaces),
			decode[networkingv1.NetworkPolicy](t, DesiredNetworkPolicy(tn, "team-a", tn.Spec.Namespaces))},
	} {
		tc.live.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as read from the cache
		drift, err := children.Drift(clientgoscheme.Scheme, tc.desired, tc.live)
		if err != nil || len(drift) > 0 {
			t.Errorf("%s: drift %v, error %v", name, drift, err)
		}
	}
}
