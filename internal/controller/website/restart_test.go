package website_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// A restarted operator remembers nothing it verified, and its cache holds
// Deployments and Services without the fields a comparison reads. A
// Deployment nobody changed since the operator created it (generation 1)
// is known to be as created and is not read again; one changed since is
// read and compared. Services, which have no generation, are read.
func TestRestartReadsOnlyTheChildrenChangedSinceTheirCreation(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	createWebsite(t, websitetest.Website("site", ns))
	key := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "site"}}
	inCache := func(g Gomega, obj client.Object) {
		g.Expect(manager.GetClient().Get(ctx, key.NamespacedName, obj)).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKey(children.ConfigHashAnnotation))
	}
	g.Eventually(func(g Gomega) {
		inCache(g, &appsv1.Deployment{})
		inCache(g, &corev1.Service{})
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")

	// restart reconciles the Website once with a new reconciler, and tells
	// what it read past the cache and wrote.
	restart := func() (deploymentReads, serviceReads int, written []string) {
		t.Helper()
		restarted, reads := restartedReconciler()
		written = reconcileWrites(g, ctx, restarted, key.NamespacedName, 1)
		return reads.count("Deployment"), reads.count("Service"), written
	}
	deploymentReads, serviceReads, written := restart()
	g.Expect(deploymentReads).To(BeZero(), "the Deployment is as created")
	g.Expect(serviceReads).To(Equal(1), "a Service has no generation to tell")
	g.Expect(written).To(BeEmpty())

	// A hand edit of the operator's labels, put back by the running
	// operator with an apply: the generation stays 1, and the operator's
	// apply in the managed fields tells that it made the Deployment.
	d := getDeployment(g, ctx, ns, "site")
	d.Labels[website.InstanceLabel] = "someone-elses"
	g.Expect(k8sClient.Update(ctx, d, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		// As the API server has it: the cache may not have seen the edit.
		restored := getDeployment(g, ctx, ns, "site")
		g.Expect(restored.Labels).To(HaveKeyWithValue(website.InstanceLabel, "site"), "restored")
		g.Expect(restored.Generation).To(Equal(int64(1)))
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")
	deploymentReads, _, written = restart()
	g.Expect(deploymentReads).To(BeZero(), "the Deployment's spec is as created")
	g.Expect(written).To(BeEmpty())

	// A hand edit of the spec, put back by the running operator: the
	// Deployment's generation is past 1 for good.
	d = getDeployment(g, ctx, ns, "site")
	d.Spec.Template.Spec.Containers[0].Image = "nginx:latest"
	g.Expect(k8sClient.Update(ctx, d, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cached := &appsv1.Deployment{}
		inCache(g, cached)
		g.Expect(cached.Generation).To(BeNumerically(">", 2), "restored")
		g.Expect(getDeployment(g, ctx, ns, "site").Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.25"))
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")

	deploymentReads, _, written = restart()
	g.Expect(deploymentReads).To(Equal(1), "a Deployment changed since its creation is compared")
	g.Expect(written).To(BeEmpty(), "as restored, it needs no write")
}

// A child deleted and made again by someone else from a copy of it, with
// an edit (kubectl get -o yaml, edit, kubectl replace --force), is at
// generation 1 and carries the operator's labels, hash and owner: only its
// managed fields tell that the operator did not make it. It is compared,
// and restored.
func TestChildRecreatedWithAnEditIsRestored(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns, original := siteWithDeployment(t)

	// Their copy goes in just before the operator's own create.
	var once sync.Once
	writes.onCreate(ns, func(ctx context.Context, obj client.Object) {
		if _, ok := obj.(*appsv1.Deployment); !ok {
			return
		}
		once.Do(func() {
			copied := original.DeepCopy()
			copied.ResourceVersion, copied.UID, copied.Generation, copied.CreationTimestamp = "", "", 0, metav1.Time{}
			copied.Status = appsv1.DeploymentStatus{}
			copied.Spec.Template.Spec.Containers[0].Image = "registry.example.com/theirs:1"
			g.Expect(k8sClient.Create(ctx, copied, client.FieldOwner("kubectl-create"))).To(Succeed())
		})
	})
	g.Expect(k8sClient.Delete(ctx, original)).To(Succeed())

	g.Eventually(func(g Gomega) {
		d := getDeployment(g, ctx, ns, "site")
		g.Expect(d.UID).NotTo(Equal(original.UID))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(original.Spec.Template.Spec.Containers[0].Image), "restored")
	}).WithTimeout(timeout).Should(Succeed())
}
