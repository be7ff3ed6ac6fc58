package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/tenant"
)

func init() {
	utilruntime.Must(tenantv1.AddToScheme(scheme))
}

// requireTenantAPI fails when the shared environment does not serve Tenants:
// deploy/components/tenant must be installed with the operator.
func (e *environment) requireTenantAPI(t *testing.T) {
	t.Helper()
	if err := e.Client.List(t.Context(), &tenantv1.TenantList{}); err != nil {
		t.Fatalf("the shared environment does not serve Tenants (is deploy/components/tenant generated and installed?): %v", err)
	}
}

// tenantFor creates a Tenant with namespaces, owned by the user owner, with
// a ServiceAccount, credentials and a quota.
func (e *environment) tenantFor(t *testing.T, owner string, namespaces ...string) *tenantv1.Tenant {
	t.Helper()
	tn := &tenantv1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-tenant-%d", namespaceCounter.Add(1))},
		Spec: tenantv1.TenantSpec{
			Namespaces:     namespaces,
			Owners:         []tenantv1.TenantSubject{{Kind: tenantv1.UserSubject, Name: owner}},
			ServiceAccount: &tenantv1.TenantServiceAccount{},
			Credentials:    &tenantv1.TenantCredentials{},
			Quota: &tenantv1.TenantQuota{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5"), corev1.ResourceRequestsCPU: resource.MustParse("2")},
				TenantContainerDefaults: &tenantv1.TenantContainerDefaults{
					DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			},
		},
	}
	if err := e.Client.Create(t.Context(), tn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), tn) })
	return tn
}

func (e *environment) eventuallyTenantReady(t *testing.T, name string) *tenantv1.Tenant {
	t.Helper()
	tn := &tenantv1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(e.Client.Get(t.Context(), types.NamespacedName{Name: name}, tn)).To(Succeed())
		c := meta.FindStatusCondition(tn.Status.Conditions, tenantv1.TenantReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(tn.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).WithTimeout(timeout).Should(Succeed())
	return tn
}

// restrictedDeployment runs one pod that meets the restricted Pod Security
// Standard the tenant's namespaces enforce.
func restrictedDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(int64(101)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name: "web", Image: "nginx:1.25",
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

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

func (e *environment) tenantKubeconfig(g Gomega, ctx context.Context, home string) (*rest.Config, types.UID) {
	secret := &corev1.Secret{}
	g.Expect(e.Client.Get(ctx, types.NamespacedName{Namespace: home, Name: tenant.DefaultCredentialsSecretName}, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKey(tenantv1.TenantKubeconfigKey))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[tenantv1.TenantKubeconfigKey])
	g.Expect(err).NotTo(HaveOccurred())
	return cfg, secret.UID
}

// An owner (impersonated) can create a Deployment in the tenant's namespace
// through the built-in admin role the operator binds (with its own RBAC, as
// its ServiceAccount: bind on admin, edit and view only), and is forbidden
// in another tenant's. The pods count in the quota, and the usage shows in
// the Tenant's status.
func TestTenantOwnerAccessAndQuota(t *testing.T) {
	e := shared
	e.requireTenantAPI(t)
	ctx := t.Context()
	mine, theirs := fmt.Sprintf("e2e-mine-%d", namespaceCounter.Add(1)), fmt.Sprintf("e2e-theirs-%d", namespaceCounter.Add(1))
	a := e.tenantFor(t, "alice@example.com", mine)
	b := e.tenantFor(t, "bob@example.com", theirs)
	e.eventuallyTenantReady(t, a.Name)
	e.eventuallyTenantReady(t, b.Name)

	cfg := rest.CopyConfig(e.Cluster.RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice@example.com"}
	alice, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	g.Expect(alice.Create(ctx, restrictedDeployment(mine))).To(Succeed(), "the owner's own namespace")
	err = alice.Create(ctx, restrictedDeployment(theirs))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another tenant's namespace: %v", err)

	g.Eventually(func(g Gomega) {
		tn := &tenantv1.Tenant{}
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: a.Name}, tn)).To(Succeed())
		g.Expect(tn.Status.Quota).NotTo(BeNil())
		g.Expect(tn.Status.Quota.Used.Pods().Value()).To(Equal(int64(1)))
		g.Expect(tn.Status.Quota.Used.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).String()).To(Equal("100m"), "the LimitRange's default request")
	}).WithTimeout(timeout).Should(Succeed())
}

// The credentials Secret's kubeconfig authenticates as the tenant's
// ServiceAccount; after a rotation the new token works and the old one is
// rejected.
func TestTenantCredentialsRotate(t *testing.T) {
	e := shared
	e.requireTenantAPI(t)
	ctx := t.Context()
	home := fmt.Sprintf("e2e-creds-%d", namespaceCounter.Add(1))
	tn := e.tenantFor(t, "carol@example.com", home)
	tn = e.eventuallyTenantReady(t, tn.Name)
	g := NewWithT(t)

	oldConfig, oldUID := e.tenantKubeconfig(g, ctx, home)
	user, err := whoAmI(ctx, oldConfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":tenant"))

	// As a person would, retrying when the operator's own write got in between.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &tenantv1.Tenant{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: tn.Name}, latest); err != nil {
			return err
		}
		latest.Spec.Credentials.RotationToken = time.Now().UTC().Format(time.RFC3339)
		return e.Client.Update(ctx, latest)
	})).To(Succeed())
	var newConfig *rest.Config
	g.Eventually(func(g Gomega) {
		var uid types.UID
		newConfig, uid = e.tenantKubeconfig(g, ctx, home)
		g.Expect(uid).NotTo(Equal(oldUID))
	}).WithTimeout(timeout).Should(Succeed())

	user, err = whoAmI(ctx, newConfig)
	g.Expect(err).NotTo(HaveOccurred(), "the new token works")
	g.Expect(user).To(Equal("system:serviceaccount:" + home + ":tenant"))
	g.Eventually(func(g Gomega) {
		_, err := whoAmI(ctx, oldConfig)
		g.Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "%v", err)
	}).WithTimeout(10*time.Second).Should(Succeed(), "the old token is rejected")
}

// Deleting a Tenant with the default policy keeps its namespaces and their
// data; the garbage collector and the operator remove its access.
func TestTenantRetainDeletionKeepsData(t *testing.T) {
	e := shared
	e.requireTenantAPI(t)
	ctx := t.Context()
	home := fmt.Sprintf("e2e-retain-%d", namespaceCounter.Add(1))
	tn := e.tenantFor(t, "dave@example.com", home)
	e.eventuallyTenantReady(t, tn.Name)
	g := NewWithT(t)
	g.Expect(e.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: home}})).To(Succeed())

	g.Expect(e.Client.Delete(ctx, tn)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := e.Client.Get(ctx, types.NamespacedName{Name: tn.Name}, &tenantv1.Tenant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	}).WithTimeout(timeout).Should(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: home}, ns)).To(Succeed())
	g.Expect(ns.DeletionTimestamp).To(BeNil())
	g.Expect(ns.Labels).NotTo(HaveKey(tenantv1.TenantLabel))
	g.Expect(e.Client.Get(ctx, types.NamespacedName{Namespace: home, Name: "data"}, &corev1.ConfigMap{})).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := e.Client.Get(ctx, types.NamespacedName{Namespace: home, Name: "tenant-quota"}, &corev1.ResourceQuota{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	}).WithTimeout(timeout).Should(Succeed())
}

// Deleting the Tenant CRD (an uninstall, or a reinstall gone wrong)
// deletes every Tenant; their namespaces and data must survive it, as with
// a Tenant deleted under the default policy, and the operator keeps
// running. On a cluster of its own: the CRD goes away.
func TestDeletingTheTenantCRDKeepsNamespacesAndData(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	e, err := newEnvironment(ctx, envOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(e.Stop)
	home := fmt.Sprintf("e2e-crd-%d", namespaceCounter.Add(1))
	extra := home + "-b"
	tn := e.tenantFor(t, "erin@example.com", home, extra)
	e.eventuallyTenantReady(t, tn.Name)
	admin := tenant.RoleBindingName(tenant.DefaultOwnerRole)
	for _, ns := range []string{home, extra} {
		g.Expect(e.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}})).To(Succeed())
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: admin}, &rbacv1.RoleBinding{})).To(Succeed(), "the owners' access to %s", ns)
	}

	out, err := e.Kubectl(ctx, "delete", "crd", "tenants.example.com", "--timeout=90s")
	g.Expect(err).NotTo(HaveOccurred(), out)

	for _, name := range []string{home, extra} {
		ns := &corev1.Namespace{}
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed(), "namespace %s kept", name)
		g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s not terminating", name)
		g.Expect(ns.OwnerReferences).To(BeEmpty())
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: "data"}, &corev1.ConfigMap{})).To(Succeed(), "data in %s kept", name)
		g.Eventually(func(g Gomega) {
			err := e.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: admin}, &rbacv1.RoleBinding{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the owners' access to %s is removed: %v", name, err)
		}).WithTimeout(timeout).Should(Succeed())
	}
	exited, _ := e.operator().Exited()
	g.Expect(exited).To(BeFalse(), "the operator keeps running without the Tenant API")
	g.Expect(httpStatus(ctx, e.operator().ProbesURL+"/healthz", "")).To(Equal(http.StatusOK))
}
