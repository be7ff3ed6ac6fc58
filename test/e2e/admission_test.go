package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/platform"
)

// The ValidatingAdmissionPolicies of deploy/base: what the operator may
// write, and the marks that are its own.
const (
	policyName              = "platform-operator-guardrails"
	reservedMarksPolicyName = "platform-operator-reserved-marks"
	postgresNamesPolicyName = "platform-operator-postgrescluster-secrets"
	instancePolicyName      = "platform-operator-instance-managers"
)

// asOperator returns a client that impersonates the operator's
// ServiceAccount, with the groups the API server gives its tokens.
func asOperator(t *testing.T) client.Client {
	t.Helper()
	config := rest.CopyConfig(shared.Cluster.RESTConfig())
	config.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + devenv.OperatorNamespace + ":" + devenv.OperatorServiceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + devenv.OperatorNamespace, "system:authenticated"},
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testDeployment is a Deployment labelled as the operator's, changed by
// opts.
func testDeployment(ns, name string, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{platform.ManagedByLabel: platform.Name},
		},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}},
				},
			},
		},
	}
	for _, opt := range opts {
		opt(d)
	}
	return d
}

func unlabelled(d *appsv1.Deployment) { d.Labels = nil }

func privileged(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func privilegedInit(d *appsv1.Deployment) {
	d.Spec.Template.Spec.InitContainers = []corev1.Container{{
		Name: "init", Image: "busybox:1.36",
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}
}

func hostPath(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{
		Name:         "host",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
	}}
}

func hostNetwork(d *appsv1.Deployment) { d.Spec.Template.Spec.HostNetwork = true }

func otherServiceAccount(d *appsv1.Deployment) { d.Spec.Template.Spec.ServiceAccountName = "admin" }

// The admission policy of deploy/base refuses what a compromised operator
// could do with the rights it has: write objects that are not its own, and
// pods that escape to their node or borrow another identity. The cluster's
// administrator is not affected.
func TestAdmissionPolicyLimitsTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := shared.newNamespace(t, nil)
	operator := asOperator(t)

	// The API server enforces a policy shortly after it is created.
	g.Eventually(func() error {
		return operator.Create(ctx, testDeployment(ns, "probe", unlabelled), client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring(policyName)), "the policy is in force")
	// Every expression type-checks against the schemas of what it matches
	// (the controller-manager writes the result).
	for _, name := range []string{policyName, reservedMarksPolicyName, postgresNamesPolicyName, instancePolicyName} {
		g.Eventually(func(g Gomega) {
			policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			g.Expect(shared.Client.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
			g.Expect(policy.Status.TypeChecking).NotTo(BeNil())
			g.Expect(policy.Status.TypeChecking.ExpressionWarnings).To(BeEmpty())
		}).WithTimeout(30*time.Second).Should(Succeed(), name)
	}

	// The admin may create what the operator may not.
	g.Expect(shared.Client.Create(ctx, testDeployment(ns, "admin-probe", privileged), client.DryRunAll)).To(Succeed())
	privilegedRefusal := "rule no-privileged"

	for _, refused := range []struct {
		name string
		opt  func(*appsv1.Deployment)
		rule string
	}{
		{"unlabelled", unlabelled, "rule managed-by-label"},
		{"host-path", hostPath, "rule no-host-path"},
		{"host-network", hostNetwork, "rule no-host-namespaces"},
		{"other-service-account", otherServiceAccount, "rule default-service-account"},
		{"privileged", privileged, privilegedRefusal},
		{"privileged-init", privilegedInit, privilegedRefusal},
	} {
		err := operator.Create(ctx, testDeployment(ns, refused.name, refused.opt))
		g.Expect(err).To(HaveOccurred(), refused.name)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", refused.name, err)
		g.Expect(err).To(MatchError(ContainSubstring(refused.rule)), refused.name)
		if strings.HasPrefix(refused.rule, "rule ") {
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", refused.name, err)
			g.Expect(err).To(MatchError(ContainSubstring(policyName)), refused.name)
		}
	}

	// An ordinary Deployment with the operator's label is allowed, and so
	// are its updates, but not one that mounts the host.
	// (Patches, since the deployment controller writes its status
	// meanwhile.)
	ordinary := testDeployment(ns, "ordinary")
	g.Expect(operator.Create(ctx, ordinary)).To(Succeed())
	scaled := ordinary.DeepCopy()
	scaled.Spec.Replicas = ptr.To(int32(2))
	g.Expect(operator.Patch(ctx, scaled, client.MergeFrom(ordinary))).To(Succeed())
	mounted := scaled.DeepCopy()
	hostPath(mounted)
	g.Expect(operator.Patch(ctx, mounted, client.MergeFrom(scaled))).To(MatchError(ContainSubstring("rule no-host-path")))

	// The administrator may create what the operator may not; the operator
	// may then not take it over by adding its label.
	admin := testDeployment(ns, "admins", unlabelled, hostPath, hostNetwork)
	g.Expect(shared.Client.Create(ctx, admin)).To(Succeed())
	takeOver := admin.DeepCopy()
	takeOver.Spec.Template.Spec = testDeployment(ns, "x").Spec.Template.Spec
	takeOver.Labels = map[string]string{platform.ManagedByLabel: platform.Name}
	err := operator.Patch(ctx, takeOver, client.MergeFrom(admin))
	g.Expect(err).To(MatchError(ContainSubstring("rule managed-by-label")))

	// The one exception: a Deployment shaped as the tutorial's operator
	// makes them may be adopted, by giving it the label, and only so. One
	// that merely shares the name with a Website may not.
	tutorialShaped := func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "website" }
	for _, tt := range []struct {
		name    string
		opts    []func(*appsv1.Deployment)
		label   bool
		allowed bool
	}{
		{"tutorial", []func(*appsv1.Deployment){unlabelled, tutorialShaped}, true, true},
		{"tutorial-kept-unlabelled", []func(*appsv1.Deployment){unlabelled, tutorialShaped}, false, false},
		{"other-container", []func(*appsv1.Deployment){unlabelled}, true, false},
		{"other-selector", []func(*appsv1.Deployment){unlabelled, tutorialShaped, func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchLabels["tier"] = "web"
			d.Spec.Template.Labels = map[string]string{"app": d.Name, "tier": "web"}
		}}, true, false},
	} {
		theirs := testDeployment(ns, tt.name, tt.opts...)
		g.Expect(shared.Client.Create(ctx, theirs)).To(Succeed(), tt.name)
		adopted := theirs.DeepCopy()
		adopted.Spec.Replicas = ptr.To(int32(2))
		if tt.label {
			adopted.Labels = map[string]string{platform.ManagedByLabel: platform.Name}
		}
		err := operator.Patch(ctx, adopted, client.MergeFrom(theirs))
		if tt.allowed {
			g.Expect(err).NotTo(HaveOccurred(), tt.name)
			continue
		}
		g.Expect(err).To(MatchError(ContainSubstring("rule managed-by-label")), tt.name)
	}
}

// The path a stolen token of the operator would take, on the cluster as
// installed from deploy/: its roles let it request tokens, bind admin and
// write Secrets anywhere; the policy keeps all three to namespaces held by
// a Tenant. (deploy/admission_policy_envtest_test.go tries every rule.)
func TestAdmissionPolicyKeepsAStolenTokenOutOfKubeSystem(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	operator := asOperator(t)
	managed := map[string]string{platform.ManagedByLabel: platform.Name, "example.com/tenant": "team-a"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", GenerateName: "stolen-token-"}}
	g.Expect(shared.Client.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = shared.Client.Delete(context.Background(), secret) })

	// A token of a ServiceAccount of kube-system, bound to a Secret there.
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", GenerateName: "stolen-token-"}}
	g.Expect(shared.Client.Create(ctx, sa)).To(Succeed())
	t.Cleanup(func() { _ = shared.Client.Delete(context.Background(), sa) })
	err := operator.SubResource("token").Create(ctx, sa, request)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("rule no-system-namespaces")))
	g.Expect(request.Status.Token).To(BeEmpty())

	// admin bound in kube-system.
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "tenant-admin", Labels: managed},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}},
	}
	err = operator.Create(ctx, binding, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("rule no-system-namespaces")))

	// A service-account-token Secret, which the token controller would fill.
	steal := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "steal", Labels: managed,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	err = operator.Create(ctx, steal, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring(policyName)))
	steal.Namespace = shared.newNamespace(t, managed)
	err = operator.Create(ctx, steal, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("rule opaque-secrets")))
}
