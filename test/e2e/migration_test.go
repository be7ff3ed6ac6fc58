package e2e

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/platform"
)

// tutorialState reproduces, in a new namespace, what the tutorial's kopf
// operator leaves behind for its website.yaml: the Deployment its handler
// builds, with its pod available, and the Website with the framework's
// finalizer and annotation. The Deployment comes first, as it did under
// the tutorial's operator.
func (e *environment) tutorialState(t *testing.T) (ns string, key types.NamespacedName) {
	t.Helper()
	g := NewWithT(t)
	ns = e.newNamespace(t, nil)
	key = types.NamespacedName{Namespace: ns, Name: "my-site"}
	out, err := e.Kubectl(t.Context(), "create", "-n", ns, "-f", repoRoot+"/testdata/tutorial/kopf-state/deployment.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client.Get(t.Context(), key, d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
	}).WithTimeout(timeout).Should(Succeed(), "the tutorial's Deployment runs")
	out, err = e.Kubectl(t.Context(), "create", "-n", ns, "-f", repoRoot+"/testdata/tutorial/kopf-state/website.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	return ns, key
}

// Without the user's consent the operator leaves the tutorial's Deployment
// alone and says how to take it over; a Website that kopf's finalizer keeps
// from being deleted says which finalizer and how to release it; released,
// the Website goes and its Deployment with it, as under the tutorial.
func TestTutorialStateWithoutAdoption(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e := shared
	ns, key := e.tutorialState(t)
	before := &appsv1.Deployment{}
	g.Expect(e.Client.Get(ctx, key, before)).To(Succeed())

	g.Eventually(func(g Gomega) {
		ready := readyCondition(e.website(g, ctx, ns, key.Name))
		g.Expect(ready.Reason).To(Equal(websitev1.DeploymentConflictReason))
		g.Expect(ready.Message).To(ContainSubstring("made by the tutorial's kopf operator"))
		g.Expect(ready.Message).To(ContainSubstring("kubectl annotate website my-site -n " + ns + " example.com/adopt=tutorial"))
	}).WithTimeout(timeout).Should(Succeed(), "the conflict names the tutorial and the way out")
	after := &appsv1.Deployment{}
	g.Expect(e.Client.Get(ctx, key, after)).To(Succeed())
	g.Expect(after.Generation).To(Equal(before.Generation), "the tutorial's Deployment is left untouched")
	g.Expect(after.OwnerReferences).To(BeEmpty())

	out, err := e.Kubectl(ctx, "delete", "-n", ns, "website/my-site", "--wait=false")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		degraded := websiteCondition(e.website(g, ctx, ns, key.Name), websitev1.DegradedCondition)
		g.Expect(degraded.Reason).To(Equal(websitev1.DeletionBlockedReason))
		g.Expect(degraded.Message).To(ContainSubstring(website.KopfFinalizer))
		g.Expect(degraded.Message).To(ContainSubstring("example.com/adopt=tutorial"))
	}).WithTimeout(timeout).Should(Succeed(), "the blocking finalizer is named")
	events, err := e.Kubectl(ctx, "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=Website,reason=DeletionBlocked")
	g.Expect(err).NotTo(HaveOccurred(), events)
	g.Expect(events).To(ContainSubstring(website.KopfFinalizer), "a Warning event names it too")

	out, err = e.Kubectl(ctx, "annotate", "website", "my-site", "-n", ns, "example.com/adopt=tutorial")
	g.Expect(err).NotTo(HaveOccurred(), out)
	for _, obj := range []client.Object{&websitev1.Website{}, &appsv1.Deployment{}} {
		g.Eventually(func() error { return e.Client.Get(ctx, key, obj) }).WithTimeout(timeout).
			Should(Satisfy(apierrors.IsNotFound), "%T removed once released", obj)
	}
}

// With the user's consent the operator takes the tutorial's Deployment over
// without downtime: the pods roll over to the Website's spec while at least
// one stays available, the Service routes to the new ones, kopf's
// finalizer and annotations go, and the Website is then like any other:
// deleting it removes everything.
func TestTutorialStateAdoptedWithoutDowntime(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e := shared
	ns, key := e.tutorialState(t)
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, ns, key.Name)).Reason).To(Equal(websitev1.DeploymentConflictReason))
	}).WithTimeout(timeout).Should(Succeed())

	sampler := sampleAvailable(t, e, key)
	out, err := e.Kubectl(ctx, "annotate", "website", "my-site", "-n", ns, "example.com/adopt=tutorial")
	g.Expect(err).NotTo(HaveOccurred(), out)

	g.Eventually(func(g Gomega) {
		w := e.website(g, ctx, ns, key.Name)
		g.Expect(readyCondition(w).Status).To(Equal(metav1.ConditionTrue), "%s: %s", readyCondition(w).Reason, readyCondition(w).Message)
		g.Expect(w.Status.AdoptedFrom).To(Equal(websitev1.AdoptFromTutorial))
		g.Expect(w.Finalizers).To(BeEmpty(), "kopf's finalizer released")
		g.Expect(w.Annotations).NotTo(HaveKey(website.KopfLastHandledAnnotation))
		g.Expect(w.Annotations).To(HaveKeyWithValue(websitev1.AdoptAnnotation, websitev1.AdoptFromTutorial), "the user's annotation is theirs")
	}).WithTimeout(timeout).Should(Succeed(), "adopted and Ready")
	minAvailable, versions := sampler.stop()
	g.Expect(versions).To(BeNumerically(">", 3), "the watch saw the rollout")
	g.Expect(minAvailable).To(BeNumerically(">=", 1), "the site stayed available in every version of the Deployment during the switch")
	t.Logf("the switch: %d versions of the Deployment, at least %d available in each", versions, minAvailable)

	d := &appsv1.Deployment{}
	g.Expect(e.Client.Get(ctx, key, d)).To(Succeed())
	g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "my-site"}), "a selector cannot change")
	g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(website.InstanceLabel, "my-site"))
	g.Expect(d.Labels).To(HaveKeyWithValue(platform.ManagedByLabel, platform.Name))
	g.Expect(d.OwnerReferences).To(ContainElement(HaveField("Name", "my-site")))
	g.Expect(d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), "the Website's spec rolled out")
	slices := &discoveryv1.EndpointSliceList{}
	g.Expect(e.Client.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "my-site"})).To(Succeed())
	g.Expect(slices.Items).NotTo(BeEmpty())
	g.Expect(slices.Items[0].Endpoints).NotTo(BeEmpty(), "the Service routes to the adopted Deployment's pods")
	events, err := e.Kubectl(ctx, "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=Website")
	g.Expect(err).NotTo(HaveOccurred(), events)
	g.Expect(events).To(And(ContainSubstring("DeploymentAdopted"), ContainSubstring("TutorialReleased")))

	// Drift repair works on the adopted Deployment like on any other.
	g.Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := e.Client.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:hand-edited"
		return e.Client.Update(ctx, d, client.FieldOwner("kubectl-edit"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.25"))
	}).WithTimeout(timeout).Should(Succeed(), "a hand edit of the adopted Deployment is repaired")

	// The port the tutorial's Deployment set is the operator's alone now:
	// a new port replaces it instead of joining it.
	out, err = e.Kubectl(ctx, "patch", "website", "my-site", "-n", ns, "--type=merge", "-p", `{"spec":{"port":8080}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(e.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Ports).To(ConsistOf(HaveField("ContainerPort", int32(8080))))
	}).WithTimeout(timeout).Should(Succeed(), "the tutorial's port 80 does not stay next to 8080")

	out, err = e.Kubectl(ctx, "delete", "-n", ns, "website/my-site")
	g.Expect(err).NotTo(HaveOccurred(), out)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		g.Eventually(func() error { return e.Client.Get(ctx, key, obj) }).WithTimeout(timeout).
			Should(Satisfy(apierrors.IsNotFound), "%T removed with the Website", obj)
	}
}

// availableSampler records the fewest available replicas a Deployment had
// in any of its versions the API server stored, through a watch.
type availableSampler struct {
	cancel   context.CancelFunc
	done     sync.WaitGroup
	min      int32
	versions int
}

// sampleAvailable watches the Deployment from its current version until stop.
func sampleAvailable(t *testing.T, e *environment, key types.NamespacedName) *availableSampler {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	watcher, err := client.NewWithWatch(e.Cluster.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	current := &appsv1.Deployment{}
	if err := e.Client.Get(ctx, key, current); err != nil {
		t.Fatal(err)
	}
	events, err := watcher.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: current.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	s := &availableSampler{cancel: cancel, min: current.Status.AvailableReplicas, versions: 1}
	s.done.Go(func() {
		defer events.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case event, ok := <-events.ResultChan():
				if !ok {
					return
				}
				if d, isDeployment := event.Object.(*appsv1.Deployment); isDeployment {
					s.min = min(s.min, d.Status.AvailableReplicas)
					s.versions++
				}
			}
		}
	})
	return s
}

// stop ends the watch and returns the fewest available replicas seen and
// the number of versions seen.
func (s *availableSampler) stop() (int32, int) {
	s.cancel()
	s.done.Wait()
	return s.min, s.versions
}
