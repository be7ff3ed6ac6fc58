package tenant_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/internal/testgen"
)

const timeout = 20 * time.Second

var counter atomic.Int64

// unique returns a name unique to the suite run.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, counter.Add(1))
}

// newTenant creates a Tenant of the given namespaces with one owner, alice;
// options change its spec first.
func newTenant(t *testing.T, namespaces []string, opts ...func(*tenantv1.Tenant)) *tenantv1.Tenant {
	t.Helper()
	tn := &tenantv1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: unique("team")},
		Spec: tenantv1.TenantSpec{
			Namespaces: namespaces,
			Owners:     []tenantv1.TenantSubject{{Kind: tenantv1.UserSubject, Name: "alice-" + namespaces[0]}},
		},
	}
	for _, o := range opts {
		o(tn)
	}
	if err := k8sClient.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	return tn
}

func withCredentials(tn *tenantv1.Tenant) {
	tn.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{}
	tn.Spec.Credentials = &tenantv1.TenantCredentials{}
}

func withRole(role string) func(*tenantv1.Tenant) {
	return func(tn *tenantv1.Tenant) { tn.Spec.OwnerRole = role }
}

func withQuota(tn *tenantv1.Tenant) {
	tn.Spec.Quota = &tenantv1.TenantQuota{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("2")},
		TenantContainerDefaults: &tenantv1.TenantContainerDefaults{
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		},
	}
}

func getTenant(g Gomega, ctx context.Context, name string) *tenantv1.Tenant {
	tn := &tenantv1.Tenant{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, tn)).To(Succeed())
	return tn
}

func condition(tn *tenantv1.Tenant, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(tn.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// eventuallyCondition waits until the Tenant's condition has status and
// reason, for the current generation, and returns the Tenant.
func eventuallyCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) *tenantv1.Tenant {
	t.Helper()
	var tn *tenantv1.Tenant
	NewWithT(t).Eventually(func(g Gomega) {
		tn = getTenant(g, t.Context(), name)
		c := condition(tn, typ)
		g.Expect(c.ObservedGeneration).To(Equal(tn.Generation))
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}).WithTimeout(timeout).Should(Succeed())
	return tn
}

func namespace(g Gomega, ctx context.Context, name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed())
	return ns
}

// exists reports whether the object named key exists.
func exists(g Gomega, ctx context.Context, key types.NamespacedName, obj client.Object) bool {
	err := k8sClient.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// credentialsSecret reads the Tenant's credentials Secret.
func credentialsSecret(g Gomega, ctx context.Context, home string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, key(home, tenant.DefaultCredentialsSecretName), s)).To(Succeed())
	return s
}

// whoAmI asks the API server who the token authenticates as.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// settled waits until the Tenant has not changed for two seconds and
// returns it.
func settled(t *testing.T, name string) *tenantv1.Tenant {
	t.Helper()
	var tn *tenantv1.Tenant
	NewWithT(t).Eventually(func(g Gomega) {
		tn = getTenant(g, t.Context(), name)
		g.Consistently(func(g Gomega) {
			g.Expect(getTenant(g, t.Context(), name).ResourceVersion).To(Equal(tn.ResourceVersion))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	return tn
}

// eventuallyRejected waits until the API server refuses cfg's token. The API
// server checks a bound token's Secret in its informer cache first, so the
// refusal follows the Secret's deletion by the cache's delay.
func eventuallyRejected(t *testing.T, cfg *rest.Config, why string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		_, err := whoAmI(t.Context(), cfg)
		g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "%v", err)
	}).WithTimeout(10*time.Second).Should(Succeed(), why)
}

func kubeconfigOf(g Gomega, secret *corev1.Secret) *rest.Config {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[tenantv1.TenantKubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}

// tenantEvents are the notes of the events about Tenant name, by reason.
func tenantEvents(g Gomega, ctx context.Context, name string) map[string][]string {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, list)).To(Succeed())
	notes := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "Tenant" && e.Regarding.Name == name {
			notes[e.Reason] = append(notes[e.Reason], e.Note)
		}
	}
	return notes
}

func configMapIn(t *testing.T, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Data: map[string]string{"precious": "yes"}}
	if err := k8sClient.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}

func TestTenantBecomesReadyWithAllItsChildren(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home, dev := unique("home"), unique("dev")
	tn := newTenant(t, []string{home, dev}, withCredentials, withQuota)

	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g := NewWithT(t)
	for _, typ := range []string{tenantv1.TenantNamespacesReadyCondition, tenantv1.TenantAccessReadyCondition, tenantv1.TenantCredentialsReadyCondition} {
		g.Expect(condition(tn, typ).Status).To(Equal(metav1.ConditionTrue), typ)
	}
	g.Expect(condition(tn, tenantv1.TenantDegradedCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(tn.Finalizers).To(ConsistOf(tenantv1.TenantFinalizer))
	g.Expect(tn.Status.Ready).To(Equal("2/2"))

	owner := "alice-" + home
	for _, name := range []string{home, dev} {
		ns := namespace(g, ctx, name)
		g.Expect(ns.OwnerReferences).To(BeEmpty(), "namespaces are labelled, not owned")
		g.Expect(ns.Labels).To(HaveKeyWithValue(tenantv1.TenantLabel, tn.Name))
		g.Expect(ns.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "platform-operator"))
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))

		rb := &rbacv1.RoleBinding{}
		g.Expect(k8sClient.Get(ctx, key(name, "tenant-admin"), rb)).To(Succeed())
		g.Expect(rb.RoleRef.Name).To(Equal("admin"))
		g.Expect(rb.Subjects).To(ConsistOf(
			rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: owner},
			rbacv1.Subject{Kind: "ServiceAccount", Name: "tenant", Namespace: home}))
		g.Expect(metav1.IsControlledBy(rb, tn)).To(BeTrue())

		g.Expect(exists(g, ctx, key(name, "tenant-quota"), &corev1.ResourceQuota{})).To(BeTrue())
		g.Expect(exists(g, ctx, key(name, "tenant-defaults"), &corev1.LimitRange{})).To(BeTrue())
		g.Expect(exists(g, ctx, key(name, "tenant-isolation"), &networkingv1.NetworkPolicy{})).To(BeTrue())
	}
	sa := &corev1.ServiceAccount{}
	g.Expect(k8sClient.Get(ctx, key(home, "tenant"), sa)).To(Succeed())
	g.Expect(exists(g, ctx, key(dev, "tenant"), &corev1.ServiceAccount{})).To(BeFalse(), "only in the home namespace")

	// What was made is told in ChildrenCreated events, not one per child.
	g.Eventually(func(g Gomega) {
		notes := tenantEvents(g, ctx, tn.Name)
		g.Expect(notes).To(HaveKey("CredentialsIssued"))
		g.Expect(notes).To(HaveKey("ChildrenCreated"))
		g.Expect(notes).To(HaveLen(2), "no other event: %v", notes)
		created := strings.Join(notes["ChildrenCreated"], ", ")
		for _, child := range []string{"Namespace " + home, "Namespace " + dev, "ServiceAccount tenant in " + home,
			"RoleBinding tenant-admin in " + home, "RoleBinding tenant-admin in " + dev, "NetworkPolicy tenant-isolation in " + dev,
			"ResourceQuota tenant-quota in " + dev, "LimitRange tenant-defaults in " + home} {
			g.Expect(created).To(ContainSubstring(child))
		}
	}).WithTimeout(timeout).Should(Succeed())

	// Status shows what is granted where.
	g.Expect(tn.Status.Namespaces).To(HaveLen(2))
	for _, ns := range tn.Status.Namespaces {
		g.Expect(ns.Phase).To(Equal(tenantv1.NamespaceActive))
		g.Expect(ns.Role).To(Equal("admin"))
		g.Expect(ns.Subjects).To(HaveLen(2))
	}
	g.Expect(tn.Status.Credentials).NotTo(BeNil())
	g.Expect(tn.Status.Credentials.ExpiresAt.Sub(tn.Status.Credentials.IssuedAt.Time)).To(BeNumerically("~", 24*time.Hour, time.Minute))
	g.Expect(tn.Status.Quota).NotTo(BeNil())
	g.Expect(tn.Status.Quota.Hard.Pods().String()).To(Equal("20"), "10 per namespace, two namespaces")

	// The kubeconfig of the Secret authenticates as the ServiceAccount.
	secret := credentialsSecret(g, ctx, home)
	g.Expect(metav1.IsControlledBy(secret, tn)).To(BeTrue())
	user, err := whoAmI(ctx, kubeconfigOf(g, secret))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":tenant"))

	// A reconcile with nothing to change writes nothing: a label someone
	// adds to the ServiceAccount brings a reconcile, and neither the
	// Tenant's status, the Secret nor the ServiceAccount is written.
	tn = settled(t, tn.Name)
	secretVersion := credentialsSecret(g, ctx, home).ResourceVersion
	mark := calls.mark()
	sa.Labels["touched-by"] = "someone"
	g.Expect(k8sClient.Update(ctx, sa)).To(Succeed())
	touched := sa.ResourceVersion
	brought := nextReconcile(t, tn.Name, mark, "")
	// It has ended once the next reconcile starts: an annotation brings one.
	g.Expect(k8sClient.Patch(ctx, &tenantv1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tn.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.example.com/next":"1"}}}`)))).To(Succeed())
	nextReconcile(t, tn.Name, mark, brought)
	var written []call
	for _, c := range calls.since(mark) {
		if c.reconcile == brought && c.verb != "get" {
			written = append(written, c)
		}
	}
	g.Expect(written).To(BeEmpty(), "the writes of the reconcile that the ServiceAccount's label brought")
	g.Expect(credentialsSecret(g, ctx, home).ResourceVersion).To(Equal(secretVersion))
	g.Expect(getTenant(g, ctx, tn.Name).Status).To(Equal(tn.Status))
	current := &corev1.ServiceAccount{}
	g.Expect(k8sClient.Get(ctx, key(home, "tenant"), current)).To(Succeed())
	g.Expect(current.ResourceVersion).To(Equal(touched))
}

// nextReconcile waits for a reconcile of the Tenant name, other than
// after, that started after mark (it reads the Tenant first), and returns
// its ID.
func nextReconcile(t *testing.T, name string, mark int, after types.UID) types.UID {
	t.Helper()
	var id types.UID
	NewWithT(t).Eventually(func(g Gomega) {
		for _, c := range calls.since(mark) {
			if c.verb == "get" && c.kind == "Tenant" && c.key.Name == name && c.reconcile != "" && c.reconcile != after {
				id = c.reconcile
				return
			}
		}
		g.Expect(id).NotTo(BeEmpty(), "a reconcile of Tenant %s", name)
	}).WithTimeout(timeout).Should(Succeed())
	return id
}

// The owner may do what the owner role allows in the tenant's namespaces,
// and nothing in another tenant's. (The built-in admin role grants nothing
// in envtest, which does not aggregate it; the end-to-end test uses it.)
func TestOwnerCanWorkInTheTenantsNamespacesOnly(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	mine, theirs := unique("mine"), unique("theirs")
	a := newTenant(t, []string{mine}, withRole(deployerRole))
	b := newTenant(t, []string{theirs}, withRole(deployerRole))
	eventuallyCondition(t, a.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	eventuallyCondition(t, b.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)

	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice-" + mine}
	alice, err := client.New(cfg, client.Options{Scheme: suite.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	deployment := func(ns string) *appsv1.Deployment {
		labels := map[string]string{"app": "web"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
				},
			},
		}
	}
	g := NewWithT(t)
	g.Expect(alice.Create(ctx, deployment(mine), client.DryRunAll)).To(Succeed(), "the owner's own namespace")
	err = alice.Create(ctx, deployment(theirs), client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another tenant's namespace: %v", err)
}

func TestExistingNamespaceIsNotTakenOverUnlessLabelledForAdoption(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	existing := unique("existing")
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: existing, Labels: map[string]string{"team": "x"}}})).To(Succeed())
	configMapIn(t, existing)

	tn := newTenant(t, []string{existing})
	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantNamespacesReadyCondition, metav1.ConditionFalse, tenantv1.NamespaceConflictReason)
	g.Expect(condition(tn, tenantv1.TenantDegradedCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(tn, tenantv1.TenantNamespacesReadyCondition).Message).To(ContainSubstring(tenantv1.TenantAdoptLabel + "=" + tn.Name))
	g.Expect(tn.Status.Namespaces).To(ConsistOf(HaveField("Phase", tenantv1.NamespaceConflict)))
	NewWithT(t).Consistently(func(g Gomega) {
		ns := namespace(g, ctx, existing)
		g.Expect(ns.Labels).To(Equal(map[string]string{"team": "x", "kubernetes.io/metadata.name": existing}), "untouched")
		g.Expect(exists(g, ctx, key(existing, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeFalse(), "no access granted in it")
	}).WithTimeout(2 * time.Second).Should(Succeed())

	// A person hands it over.
	ns := namespace(g, ctx, existing)
	ns.Labels[tenantv1.TenantAdoptLabel] = tn.Name
	g.Expect(k8sClient.Update(ctx, ns)).To(Succeed())
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	ns = namespace(g, ctx, existing)
	g.Expect(ns.Labels).To(HaveKeyWithValue(tenantv1.TenantLabel, tn.Name))
	g.Expect(ns.Labels).To(HaveKeyWithValue("team", "x"), "other labels kept")
	g.Expect(exists(g, ctx, key(existing, "data"), &corev1.ConfigMap{})).To(BeTrue())
}

// A namespace that still carries the operator's managed-by label but no
// Tenant's (someone removed it by hand) is in the operator's cache: labelled
// for adoption, it is adopted all the same.
func TestAManagedNamespaceLabelledForAdoptionIsAdopted(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	existing := unique("unheld")
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: existing,
		Labels: map[string]string{platform.ManagedByLabel: platform.Name}}})).To(Succeed())
	configMapIn(t, existing)

	tn := newTenant(t, []string{existing})
	eventuallyCondition(t, tn.Name, tenantv1.TenantNamespacesReadyCondition, metav1.ConditionFalse, tenantv1.NamespaceConflictReason)

	ns := namespace(g, ctx, existing)
	ns.Labels[tenantv1.TenantAdoptLabel] = tn.Name
	g.Expect(k8sClient.Update(ctx, ns)).To(Succeed())
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g.Expect(namespace(g, ctx, existing).Labels).To(HaveKeyWithValue(tenantv1.TenantLabel, tn.Name))
	g.Expect(exists(g, ctx, key(existing, "data"), &corev1.ConfigMap{})).To(BeTrue())
}

// A namespace whose update fails (here a policy refuses any change to it)
// is still the Tenant's: access in it stays, and the other namespaces'
// isolation still admits its traffic.
func TestANamespaceWhoseUpdateFailsIsStillHeld(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	stuck, other := unique("stuck"), unique("other")
	tn := newTenant(t, []string{other, stuck})
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)

	testgen.Refuse(t, k8sClient, stuck, admissionregistrationv1.Update, "", "namespaces", stuck, "namespace "+stuck+" is frozen")

	// The policy takes effect a moment after its creation.
	NewWithT(t).Eventually(func() error {
		ns := namespace(g, ctx, stuck)
		ns.Labels["probe"] = "x"
		return k8sClient.Update(ctx, ns, client.DryRunAll)
	}).WithTimeout(timeout).Should(MatchError(ContainSubstring("frozen")))

	// A new Pod Security level relabels every namespace: stuck's update is
	// refused.
	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.PodSecurity = tenantv1.BaselinePodSecurity
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		c := condition(getTenant(g, ctx, tn.Name), tenantv1.TenantNamespacesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("frozen"))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(exists(g, ctx, key(stuck, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeTrue(), "access in it stays")
	np := &networkingv1.NetworkPolicy{}
	g.Expect(k8sClient.Get(ctx, key(other, "tenant-isolation"), np)).To(Succeed())
	g.Expect(np.Spec.Ingress[0].From[0].NamespaceSelector.MatchExpressions[0].Values).To(ContainElement(stuck),
		"its traffic is still admitted")
}

// Owners changed to a list the API server refuses to bind (an invalid
// ServiceAccount name) leave no binding of the former owners: access fails
// closed until the spec is fixed.
func TestRefusedOwnersRemoveTheFormerOnesAccess(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	home := unique("refused")
	tn := newTenant(t, []string{home})
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g.Expect(exists(g, ctx, key(home, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeTrue())

	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.Owners = []tenantv1.TenantSubject{{Kind: tenantv1.ServiceAccountSubject, Name: "Deploy_Bot", Namespace: home}}
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	eventuallyCondition(t, tn.Name, tenantv1.TenantAccessReadyCondition, metav1.ConditionFalse, tenantv1.TenantInvalidSpecReason)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(exists(g, ctx, key(home, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeFalse(), "the former owner's binding is gone")
	}).WithTimeout(timeout).Should(Succeed())
}

func TestTwoTenantsCannotShareANamespace(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	shared := unique("shared")
	first := newTenant(t, []string{shared})
	eventuallyCondition(t, first.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)

	second := newTenant(t, []string{unique("own"), shared})
	tn := eventuallyCondition(t, second.Name, tenantv1.TenantNamespacesReadyCondition, metav1.ConditionFalse, tenantv1.NamespaceConflictReason)
	g := NewWithT(t)
	g.Expect(condition(tn, tenantv1.TenantNamespacesReadyCondition).Message).To(ContainSubstring("held by Tenant " + first.Name))
	g.Expect(namespace(g, ctx, shared).Labels).To(HaveKeyWithValue(tenantv1.TenantLabel, first.Name), "the first keeps it")
	g.Expect(tn.Status.Ready).To(Equal("1/2"))
	rb := &rbacv1.RoleBinding{}
	g.Expect(k8sClient.Get(ctx, key(shared, "tenant-admin"), rb)).To(Succeed())
	g.Expect(metav1.IsControlledBy(rb, first)).To(BeTrue(), "only the first's access in it")
	np := &networkingv1.NetworkPolicy{}
	g.Expect(k8sClient.Get(ctx, key(tn.Spec.Namespaces[0], "tenant-isolation"), np)).To(Succeed())
	g.Expect(np.Spec.Ingress[0].From[0].NamespaceSelector.MatchExpressions[0].Values).To(Equal([]string{tn.Spec.Namespaces[0]}),
		"a namespace held by another tenant is not admitted")
}

func TestSuspendRemovesAccessAndKeepsData(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("susp")
	tn := newTenant(t, []string{home}, withCredentials, withQuota)
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	configMapIn(t, home)
	g := NewWithT(t)
	oldConfig := kubeconfigOf(g, credentialsSecret(g, ctx, home))

	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.Suspend = true
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionFalse, tenantv1.TenantSuspendedReason)

	g.Expect(condition(tn, tenantv1.TenantDegradedCondition).Status).To(Equal(metav1.ConditionFalse), "suspension is no fault")
	g.Expect(exists(g, ctx, key(home, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeFalse(), "RoleBinding removed")
	g.Expect(exists(g, ctx, key(home, tenant.DefaultCredentialsSecretName), &corev1.Secret{})).To(BeFalse(), "credentials removed")
	g.Expect(exists(g, ctx, key(home, "data"), &corev1.ConfigMap{})).To(BeTrue(), "data kept")
	g.Expect(exists(g, ctx, key(home, "tenant-quota"), &corev1.ResourceQuota{})).To(BeTrue(), "quota kept")
	g.Expect(namespace(g, ctx, home).DeletionTimestamp).To(BeNil())
	g.Expect(tn.Status.Namespaces[0].Role).To(BeEmpty())
	g.Expect(tn.Status.Credentials).To(BeNil())
	eventuallyRejected(t, oldConfig, "the token died with its Secret")

	tn.Spec.Suspend = false
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g.Expect(exists(g, ctx, key(home, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeTrue())
}

func TestRotationReplacesTheSecretAndRevokesTheOldToken(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("rot")
	tn := newTenant(t, []string{home}, withCredentials)
	eventuallyCondition(t, tn.Name, tenantv1.TenantCredentialsReadyCondition, metav1.ConditionTrue, tenantv1.CredentialsIssuedReason)
	g := NewWithT(t)
	first := credentialsSecret(g, ctx, home)
	firstConfig := kubeconfigOf(g, first)
	_, err := whoAmI(ctx, firstConfig)
	g.Expect(err).NotTo(HaveOccurred())

	issuedBefore, deletedBefore := childWrites(g, "Secret", "issue"), childWrites(g, "Secret", "delete")

	// A new rotationToken forces a rotation.
	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.Credentials.RotationToken = "2026-12-01"
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	var second *corev1.Secret
	NewWithT(t).Eventually(func(g Gomega) {
		second = credentialsSecret(g, ctx, home)
		g.Expect(second.UID).NotTo(Equal(first.UID), "a new Secret object")
		g.Expect(second.Data).To(HaveKey(tenantv1.TenantKubeconfigKey))
		g.Expect(getTenant(g, ctx, tn.Name).Status.Credentials).To(HaveField("RotationToken", "2026-12-01"))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(childWrites(g, "Secret", "issue")).To(BeNumerically(">", issuedBefore), "the token written is counted")
	g.Expect(childWrites(g, "Secret", "delete")).To(BeNumerically(">", deletedBefore), "the rotated Secret's deletion is counted")

	user, err := whoAmI(ctx, kubeconfigOf(g, second))
	g.Expect(err).NotTo(HaveOccurred(), "the new token works")
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":tenant"))
	eventuallyRejected(t, firstConfig, "the old token is rejected once the API server sees its Secret gone")

	// Renewal: at 80 % of the token's life (on the reconciler's clock) the
	// Secret is replaced again.
	fakeClock.Step(20 * time.Hour)
	tn = getTenant(g, ctx, tn.Name)
	tn.Annotations = map[string]string{"nudge": "renewal"} // a reconcile now, not when the real-time requeue fires
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(credentialsSecret(g, ctx, home).UID).NotTo(Equal(second.UID))
	}).WithTimeout(timeout).Should(Succeed())
	eventuallyRejected(t, kubeconfigOf(g, second), "the renewed-away token is rejected")
}

// A kubeconfig holds a token of the ServiceAccount it was issued for: when
// the spec names another one, the old one is removed and the Secret
// replaced with a token of the new one, which works.
func TestRenamedServiceAccountGetsNewCredentials(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("sarename")
	tn := newTenant(t, []string{home}, withCredentials)
	eventuallyCondition(t, tn.Name, tenantv1.TenantCredentialsReadyCondition, metav1.ConditionTrue, tenantv1.CredentialsIssuedReason)
	g := NewWithT(t)
	first := credentialsSecret(g, ctx, home)

	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{Name: "ci"}
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	var second *corev1.Secret
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(exists(g, ctx, key(home, "tenant"), &corev1.ServiceAccount{})).To(BeFalse(), "the former ServiceAccount is removed")
		second = credentialsSecret(g, ctx, home)
		g.Expect(second.UID).NotTo(Equal(first.UID), "a new Secret object")
		g.Expect(second.Data).To(HaveKey(tenantv1.TenantKubeconfigKey))
	}).WithTimeout(timeout).Should(Succeed())
	user, err := whoAmI(ctx, kubeconfigOf(g, second))
	g.Expect(err).NotTo(HaveOccurred(), "the new token works")
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":ci"))
	eventuallyCondition(t, tn.Name, tenantv1.TenantCredentialsReadyCondition, metav1.ConditionTrue, tenantv1.CredentialsIssuedReason)
}

func TestOwnerRoleOutsideTheAllowedOnesIsNotBound(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("role")
	tn := newTenant(t, []string{home}, func(tn *tenantv1.Tenant) { tn.Spec.OwnerRole = "cluster-admin" })
	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantAccessReadyCondition, metav1.ConditionFalse, tenantv1.OwnerRoleNotAllowedReason)
	g := NewWithT(t)
	g.Expect(condition(tn, tenantv1.TenantDegradedCondition).Reason).To(Equal(tenantv1.OwnerRoleNotAllowedReason))
	g.Expect(exists(g, ctx, key(home, "tenant-cluster-admin"), &rbacv1.RoleBinding{})).To(BeFalse())

	// Back to an allowed role: bound.
	tn.Spec.OwnerRole = "view"
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g.Expect(exists(g, ctx, key(home, "tenant-view"), &rbacv1.RoleBinding{})).To(BeTrue())
}

func TestNamespaceRemovedFromSpecIsReleasedNotDeleted(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home, extra := unique("keep"), unique("leave")
	tn := newTenant(t, []string{home, extra}, withQuota)
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	configMapIn(t, extra)
	g := NewWithT(t)

	tn = getTenant(g, ctx, tn.Name)
	tn.Spec.Namespaces = []string{home}
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		ns := namespace(g, ctx, extra)
		g.Expect(ns.Labels).NotTo(HaveKey(tenantv1.TenantLabel))
		g.Expect(ns.Labels).NotTo(HaveKey("app.kubernetes.io/managed-by"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(namespace(g, ctx, extra).DeletionTimestamp).To(BeNil())
	g.Expect(exists(g, ctx, key(extra, "data"), &corev1.ConfigMap{})).To(BeTrue())
	g.Expect(exists(g, ctx, key(extra, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeFalse(), "access removed")
	g.Expect(exists(g, ctx, key(extra, "tenant-quota"), &corev1.ResourceQuota{})).To(BeFalse())
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
}

func TestRetainDeletionKeepsNamespacesAndData(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home, dev := unique("ret"), unique("retdev")
	tn := newTenant(t, []string{home, dev}, withCredentials)
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	configMapIn(t, dev)
	g := NewWithT(t)

	g.Expect(k8sClient.Delete(ctx, tn)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Name: tn.Name}, &tenantv1.Tenant{}))).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())

	for _, name := range []string{home, dev} {
		ns := namespace(g, ctx, name)
		g.Expect(ns.DeletionTimestamp).To(BeNil(), name)
		g.Expect(ns.Labels).NotTo(HaveKey(tenantv1.TenantLabel))
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"), "the security level stays")
		g.Expect(exists(g, ctx, key(name, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeFalse(), "access revoked at once, not only by the garbage collector")
	}
	g.Expect(exists(g, ctx, key(dev, "data"), &corev1.ConfigMap{})).To(BeTrue())
	g.Expect(exists(g, ctx, key(home, tenant.DefaultCredentialsSecretName), &corev1.Secret{})).To(BeFalse())
}

func TestDeleteWithoutConfirmationKeepsNamespaces(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("unconf")
	tn := newTenant(t, []string{home}, func(tn *tenantv1.Tenant) { tn.Spec.DeletionPolicy = tenantv1.DeleteNamespaces })
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g := NewWithT(t)
	tn = getTenant(g, ctx, tn.Name)
	tn.Annotations = map[string]string{tenantv1.TenantConfirmDeleteAnnotation: "some-other-tenant"}
	g.Expect(k8sClient.Update(ctx, tn)).To(Succeed())

	g.Expect(k8sClient.Delete(ctx, tn)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Name: tn.Name}, &tenantv1.Tenant{}))).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())
	ns := namespace(g, ctx, home)
	g.Expect(ns.DeletionTimestamp).To(BeNil(), "a confirmation naming another Tenant confirms nothing")
	g.Expect(ns.Labels).NotTo(HaveKey(tenantv1.TenantLabel))
}

// With deletionPolicy Delete and the confirmation, the namespaces are
// deleted. envtest has no namespace controller, so they stay Terminating:
// the Tenant reports them, then goes away once the grace period has passed.
func TestConfirmedDeleteDeletesNamespacesAndDoesNotHang(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home := unique("del")
	tn := newTenant(t, []string{home}, func(tn *tenantv1.Tenant) {
		tn.Spec.DeletionPolicy = tenantv1.DeleteNamespaces
	})
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g := NewWithT(t)
	deleteConfirmed(t, g, tn.Name)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(namespace(g, ctx, home).DeletionTimestamp).NotTo(BeNil())
		got := getTenant(g, ctx, tn.Name)
		g.Expect(condition(got, tenantv1.TenantReadyCondition).Reason).To(Equal(tenantv1.TenantDeletingReason))
		g.Expect(got.Status.Namespaces).To(ConsistOf(And(HaveField("Name", home), HaveField("Phase", tenantv1.NamespaceTerminating))))
	}).WithTimeout(timeout).Should(Succeed())

	deleted := getTenant(g, ctx, tn.Name).DeletionTimestamp.Time
	fakeClock.SetTime(deleted.Add(deletionGracePeriod + time.Second))
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Name: tn.Name}, &tenantv1.Tenant{}))).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed(), "the Tenant goes although its namespace still terminates")
	g.Expect(namespace(g, ctx, home).DeletionTimestamp).NotTo(BeNil())
}

// deleteConfirmed confirms the deletion of the Tenant named name (its Delete
// policy's annotation) and deletes it.
func deleteConfirmed(t *testing.T, g Gomega, name string) {
	t.Helper()
	tn := getTenant(g, t.Context(), name)
	tn.Annotations = map[string]string{tenantv1.TenantConfirmDeleteAnnotation: tn.Name}
	g.Expect(k8sClient.Update(t.Context(), tn)).To(Succeed())
	// The reconciler's clock and the API server's agree on when the
	// deletion started (earlier tests moved the clock).
	fakeClock.SetTime(time.Now())
	g.Expect(k8sClient.Delete(t.Context(), tn)).To(Succeed())
}

// A namespace the Tenant still holds when it is deleted, but that is no
// longer in its spec (the user removed it to keep it, and the operator had
// not yet released it), is released, not deleted, even with a confirmed
// Delete policy.
func TestConfirmedDeleteKeepsANamespaceRemovedFromTheSpec(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home, kept := unique("delhome"), unique("delkept")
	tn := newTenant(t, []string{home}, func(tn *tenantv1.Tenant) {
		tn.Spec.DeletionPolicy = tenantv1.DeleteNamespaces
	})
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g := NewWithT(t)

	// The Tenant waits for its home namespace to terminate (envtest has no
	// namespace controller, so it never does): meanwhile a namespace held
	// by the Tenant but not in its spec shows up, as one removed from the
	// spec but not yet released would be.
	deleteConfirmed(t, g, tn.Name)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(namespace(g, ctx, home).DeletionTimestamp).NotTo(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kept, Labels: map[string]string{
		tenantv1.TenantLabel: tn.Name, platform.ManagedByLabel: platform.Name,
	}}})).To(Succeed())

	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(namespace(g, ctx, kept).Labels).NotTo(HaveKey(tenantv1.TenantLabel))
	}).WithTimeout(timeout).Should(Succeed(), "released")
	g.Expect(namespace(g, ctx, kept).DeletionTimestamp).To(BeNil(), "not deleted")
}

// An object of the Tenant's in the way of another is never written.
func TestAccessObjectInTheWayIsReported(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	home := unique("way")
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: home}})).To(Succeed())
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "tenant-quota", Namespace: home},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	g.Expect(k8sClient.Create(ctx, quota)).To(Succeed())
	ns := namespace(g, ctx, home)
	tn := newTenant(t, []string{home}, withQuota, func(tn *tenantv1.Tenant) { tn.Spec.Isolation = tenantv1.NoIsolation })
	ns.Labels = map[string]string{tenantv1.TenantAdoptLabel: tn.Name}
	g.Expect(k8sClient.Update(ctx, ns)).To(Succeed())

	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantAccessReadyCondition, metav1.ConditionFalse, tenantv1.AccessConflictReason)
	g.Expect(condition(tn, tenantv1.TenantDegradedCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(k8sClient.Get(ctx, key(home, "tenant-quota"), quota)).To(Succeed())
	g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("1"), "untouched")
	g.Expect(quota.OwnerReferences).To(BeEmpty())
	g.Expect(exists(g, ctx, key(home, "tenant-admin"), &rbacv1.RoleBinding{})).To(BeTrue(), "the rest is granted")
}

// childWrites reads platform_operator_child_writes_total of Tenants for a
// child kind and operation from the operator's metrics registry.
func childWrites(g Gomega, childKind, operation string) float64 {
	n, err := testgen.Counter("platform_operator_child_writes_total",
		map[string]string{"owner_kind": "Tenant", "child_kind": childKind, "operation": operation})
	g.Expect(err).NotTo(HaveOccurred())
	return n
}

// Access granted by hand is not kept: a subject someone adds to the
// tenant's RoleBinding is removed, and a RoleBinding someone deletes comes
// back, at once, from the watch of the Tenant's children (not from a
// periodic resync).
func TestAccessChangedByHandIsPutBack(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	home, dev := unique("home"), unique("dev")
	tn := newTenant(t, []string{home, dev})
	eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	g := NewWithT(t)
	const soon = 5 * time.Second

	rb := &rbacv1.RoleBinding{}
	g.Expect(k8sClient.Get(ctx, key(dev, "tenant-admin"), rb)).To(Succeed())
	granted := rb.Subjects
	rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "mallory"})
	g.Expect(k8sClient.Update(ctx, rb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key(dev, "tenant-admin"), rb)).To(Succeed())
		g.Expect(rb.Subjects).To(Equal(granted))
	}).WithTimeout(soon).Should(Succeed(), "the added subject is removed")

	g.Expect(k8sClient.Delete(ctx, rb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		recreated := &rbacv1.RoleBinding{}
		g.Expect(k8sClient.Get(ctx, key(dev, "tenant-admin"), recreated)).To(Succeed())
		g.Expect(recreated.UID).NotTo(Equal(rb.UID))
		g.Expect(recreated.Subjects).To(Equal(granted))
	}).WithTimeout(soon).Should(Succeed(), "the deleted RoleBinding is back")
}

// A ServiceAccount of the Tenant's name that someone else made first (pods
// may already run as it) is never adopted, bound or given credentials: the
// Tenant says why, and only its owners are bound. Once it is gone, the
// Tenant makes its own and binds that.
func TestSquattedServiceAccountIsNeitherBoundNorGivenCredentials(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	g := NewWithT(t)
	home, dev := unique("squat"), unique("squatdev")
	g.Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: home}})).To(Succeed())
	squatter := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenant.DefaultServiceAccountName, Namespace: home,
		Labels: map[string]string{"made-by": "mallory"}}}
	g.Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
	tn := newTenant(t, []string{home, dev}, withCredentials)
	ns := namespace(g, ctx, home)
	ns.Labels = map[string]string{tenantv1.TenantAdoptLabel: tn.Name}
	g.Expect(k8sClient.Update(ctx, ns)).To(Succeed())

	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantAccessReadyCondition, metav1.ConditionFalse, tenantv1.ServiceAccountConflictReason)
	g.Expect(condition(tn, tenantv1.TenantAccessReadyCondition).Message).To(ContainSubstring("ServiceAccount " + home + "/tenant"))
	g.Expect(condition(tn, tenantv1.TenantAccessReadyCondition).Message).To(ContainSubstring("spec.serviceAccount.name"))
	g.Expect(condition(tn, tenantv1.TenantCredentialsReadyCondition)).To(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", tenantv1.ServiceAccountConflictReason)))
	g.Expect(condition(tn, tenantv1.TenantDegradedCondition)).To(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", tenantv1.ServiceAccountConflictReason)))

	owner := rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice-" + home}
	for _, name := range []string{home, dev} {
		g.Eventually(func(g Gomega) {
			rb := &rbacv1.RoleBinding{}
			g.Expect(k8sClient.Get(ctx, key(name, "tenant-admin"), rb)).To(Succeed())
			g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{owner}), "the owners are bound, the squatted ServiceAccount is not")
		}).WithTimeout(timeout).Should(Succeed())
	}
	g.Consistently(func(g Gomega) {
		g.Expect(exists(g, ctx, key(home, tenant.DefaultCredentialsSecretName), &corev1.Secret{})).To(BeFalse(), "no credentials")
	}).WithTimeout(2 * time.Second).Should(Succeed())
	untouched := &corev1.ServiceAccount{}
	g.Expect(k8sClient.Get(ctx, key(home, tenant.DefaultServiceAccountName), untouched)).To(Succeed())
	g.Expect(untouched.UID).To(Equal(squatter.UID))
	g.Expect(untouched.OwnerReferences).To(BeEmpty(), "never adopted")
	g.Expect(untouched.Labels).To(Equal(squatter.Labels), "untouched")
	g.Expect(untouched.ResourceVersion).To(Equal(squatter.ResourceVersion), "not written")

	// The squatter goes: the Tenant makes its own ServiceAccount, binds it
	// and issues its credentials.
	g.Expect(k8sClient.Delete(ctx, untouched)).To(Succeed())
	tn = eventuallyCondition(t, tn.Name, tenantv1.TenantReadyCondition, metav1.ConditionTrue, tenantv1.TenantActiveReason)
	sa := &corev1.ServiceAccount{}
	g.Expect(k8sClient.Get(ctx, key(home, tenant.DefaultServiceAccountName), sa)).To(Succeed())
	g.Expect(metav1.IsControlledBy(sa, tn)).To(BeTrue())
	for _, name := range []string{home, dev} {
		rb := &rbacv1.RoleBinding{}
		g.Expect(k8sClient.Get(ctx, key(name, "tenant-admin"), rb)).To(Succeed())
		g.Expect(rb.Subjects).To(ConsistOf(owner, rbacv1.Subject{Kind: "ServiceAccount", Name: "tenant", Namespace: home}))
	}
	user, err := whoAmI(ctx, kubeconfigOf(g, credentialsSecret(g, ctx, home)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":tenant"))
}
