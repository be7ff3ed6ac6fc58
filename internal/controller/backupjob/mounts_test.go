package backupjob

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingPodReader answers every pod list with pods, slowly enough that
// concurrent callers overlap, and counts the lists by namespace.
type countingPodReader struct {
	client.Reader
	pods      []corev1.Pod
	delay     time.Duration // 50 ms when zero
	lists     sync.Map      // namespace → *atomic.Int32
	selectors atomic.Value
}

func (r *countingPodReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	n, _ := r.lists.LoadOrStore(o.Namespace, &atomic.Int32{})
	n.(*atomic.Int32).Add(1)
	if o.FieldSelector != nil {
		r.selectors.Store(o.FieldSelector.String())
	}
	delay := r.delay
	if delay == 0 {
		delay = 50 * time.Millisecond
	}
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	list.(*corev1.PodList).Items = append([]corev1.Pod(nil), r.pods...)
	return nil
}

func (r *countingPodReader) count(namespace string) int32 {
	n, ok := r.lists.Load(namespace)
	if !ok {
		return 0
	}
	return n.(*atomic.Int32).Load()
}

// The runs that start at the same moment in a namespace share one list of
// its pods; a list answers for two seconds; another namespace has its own.
func TestNamespacePodsAreListedOnceForTheRunsThatStartTogether(t *testing.T) {
	g := NewWithT(t)
	app := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", Labels: map[string]string{"app": "shop"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "shop:1"}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	reader := &countingPodReader{pods: []corev1.Pod{app}}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	pods := namespacePods{clock: clk}

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			got, err := pods.list(t.Context(), reader, "shop")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sourceNode(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}, got)).To(Equal("node-1"))
		})
	}
	wg.Wait()
	g.Expect(reader.count("shop")).To(BeEquivalentTo(1), "one list for 20 runs starting together")
	g.Expect(reader.selectors.Load()).To(Equal("status.phase!=Succeeded,status.phase!=Failed"), "only pods that may hold a volume")

	got, err := pods.list(t.Context(), reader, "shop")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Labels).To(BeEmpty(), "only what tells where a claim is mounted is kept")
	g.Expect(got[0].Spec.Containers).To(BeEmpty())
	g.Expect(got[0].Spec.Volumes).To(ConsistOf(HaveField("Name", "data")))
	g.Expect(reader.count("shop")).To(BeEquivalentTo(1), "the list answers while it is young")

	_, err = pods.list(t.Context(), reader, "blog")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reader.count("blog")).To(BeEquivalentTo(1), "another namespace, another list")

	clk.SetTime(clk.Now().Add(namespacePodsMaxAge))
	_, err = pods.list(t.Context(), reader, "shop")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reader.count("shop")).To(BeEquivalentTo(2), "listed again once the list is old")
	g.Expect(pods.lists).NotTo(HaveKey("blog"), "old lists are dropped, not kept")
}

// A run that gives up while the list it shares is being made (its
// reconcile's context is done) fails alone: the runs that share the list
// still get it.
func TestASharedListOutlivesTheCallerThatStartedIt(t *testing.T) {
	g := NewWithT(t)
	reader := &countingPodReader{delay: 300 * time.Millisecond,
		pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Spec: corev1.PodSpec{NodeName: "node-1"}}}}
	var pods namespacePods

	first, giveUp := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := pods.list(first, reader, "shop")
		firstErr <- err
	}()
	g.Eventually(func() int32 { return reader.count("shop") }).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
	secondPods := make(chan []corev1.Pod, 1)
	secondErr := make(chan error, 1)
	go func() {
		got, err := pods.list(t.Context(), reader, "shop")
		secondPods <- got
		secondErr <- err
	}()
	time.Sleep(50 * time.Millisecond)
	giveUp()

	g.Eventually(firstErr).WithTimeout(5 * time.Second).Should(Receive(MatchError(context.Canceled)))
	g.Eventually(secondErr).WithTimeout(5*time.Second).Should(Receive(BeNil()), "the list shared with the run that gave up")
	g.Expect(<-secondPods).To(HaveLen(1))
	g.Expect(reader.count("shop")).To(BeEquivalentTo(1), "one list for both")
}
