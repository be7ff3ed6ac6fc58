package website_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/controller/website/websitetest"
)

// mirror is the registry that the admission policy of
// TestImageRewrittenByAdmissionIsNotFoughtOver sends images to.
const mirror = "mirror.example.com/"

// Clusters often rewrite what the operator sets on its way into storage: a
// registry mirror's admission policy prefixes every image. The operator
// cannot tell such a rewrite from a hand edit by looking, but it must not
// fight it: no write while it runs, nor after a restart, which forgets what
// it had verified (a dry run of the apply shows that it would change
// nothing), and no event that claims a restore. A hand edit is still put
// back.
func TestImageRewrittenByAdmissionIsNotFoughtOver(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	rewriteImagesInto(t, ns)

	createWebsite(t, websitetest.Website("site", ns, websitetest.WithImage("nginx:1.25")))
	g.Eventually(func(g Gomega) {
		d := getDeployment(g, ctx, ns, "site")
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(mirror + "nginx:1.25"))
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")
	key := types.NamespacedName{Namespace: ns, Name: "site"}

	g.Expect(reconcileWrites(g, ctx, reconciler, key, 3)).To(BeEmpty(), "writes while the operator runs")

	// A restarted operator: what it verified is gone, the cache is the same.
	restarted, _ := restartedReconciler()
	version := getDeployment(g, ctx, ns, "site").ResourceVersion
	g.Expect(reconcileWrites(g, ctx, restarted, key, 1)).To(BeEmpty(), "writes after a restart")
	g.Expect(getDeployment(g, ctx, ns, "site").ResourceVersion).To(Equal(version))
	g.Expect(reconcileWrites(g, ctx, restarted, key, 3)).To(BeEmpty(), "writes after the restart's first reconcile")
	g.Consistently(func(g Gomega) {
		g.Expect(eventReasons(g, ctx, ns, "site")).To(ConsistOf("DeploymentCreated"))
	}).WithTimeout(2*time.Second).Should(Succeed(), "no event claims a restore or an update")

	// A hand edit is still put back, as the policy rewrites it.
	d := getDeployment(g, ctx, ns, "site")
	d.Spec.Template.Spec.Containers[0].Image = "evil:1"
	g.Expect(k8sClient.Update(ctx, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(mirror + "evil:1"))
	g.Eventually(func(g Gomega) {
		g.Expect(getDeployment(g, ctx, ns, "site").Spec.Template.Spec.Containers[0].Image).To(Equal(mirror + "nginx:1.25"))
		g.Expect(eventReasons(g, ctx, ns, "site")).To(ContainElement("DeploymentRestored"))
	}).WithTimeout(timeout).Should(Succeed())

	// Changed since its creation, the Deployment is compared after the next
	// restart (untouched, the first restart knew it by its generation),
	// and the dry run tells the policy's rewrite from drift again.
	g.Eventually(func(g Gomega) {
		cached := &appsv1.Deployment{}
		g.Expect(manager.GetClient().Get(ctx, key, cached)).To(Succeed())
		g.Expect(cached.Generation).To(Equal(getDeployment(g, ctx, ns, "site").Generation))
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")
	restartedAgain, reads := restartedReconciler()
	g.Expect(reconcileWrites(g, ctx, restartedAgain, key, 1)).To(BeEmpty(), "writes after the second restart")
	g.Expect(reads.count("Deployment")).To(Equal(1), "compared")
}

// rewriteImagesInto installs, for the Deployments of namespace ns, a
// mutating admission policy that prefixes each container's image with
// mirror, and waits until the API server applies it.
func rewriteImagesInto(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	const expression = `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
		containers: object.spec.template.spec.containers.map(c, Object.spec.template.spec.containers{
			name: c.name,
			image: c.image.startsWith("` + mirror + `") ? c.image : "` + mirror + `" + c.image
		})
	}}}}`
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror-" + ns},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"},
						},
					},
				}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression},
			}},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror-" + ns},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name,
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(context.WithoutCancel(ctx), obj) })
	}

	// The API server loads policies in the background: a dry-run create
	// shows when this one takes effect.
	g.Eventually(func(g Gomega) {
		probe := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "busybox"}}},
				},
			},
		}
		g.Expect(k8sClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(strings.HasPrefix(probe.Spec.Template.Spec.Containers[0].Image, mirror)).To(BeTrue(), "the policy is in effect")
	}).WithTimeout(timeout).Should(Succeed())
}
