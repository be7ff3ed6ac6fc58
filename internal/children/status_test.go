package children

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

type labelSet = labels.Set

// statusFixture is a Deployment in a fake API server whose status patches
// are counted, and a writer over it.
type statusFixture struct {
	g       Gomega
	client  client.Client
	stored  *appsv1.Deployment
	writer  *StatusWriter
	patches int
}

func newStatusFixture(t *testing.T, clk clock.PassiveClock) *statusFixture {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	f := &statusFixture{g: g, stored: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "u1"}}}
	f.client = interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(f.stored).WithStatusSubresource(f.stored).Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			f.patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	f.writer = NewStatusWriterWithClock(f.client, clk)
	return f
}

// write asks the writer for next while the cache shows cached at
// resourceVersion version, and checks that a write reaches the API server.
func (f *statusFixture) write(version string, cached, next appsv1.DeploymentStatus, summary string, interval time.Duration) (bool, time.Duration) {
	ctx := context.Background()
	before := f.stored.DeepCopy()
	before.ResourceVersion = version
	before.Status = cached
	after := f.stored.DeepCopy()
	after.Status = next
	wrote, wait, err := f.writer.PatchThrottled(ctx, before, after, before.Status, after.Status, summary, interval)
	f.g.Expect(err).NotTo(HaveOccurred())
	if wrote {
		stored := &appsv1.Deployment{}
		f.g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(f.stored), stored)).To(Succeed())
		f.g.Expect(stored.Status).To(Equal(next), "the API server holds what was written, whatever the cache showed")
	}
	return wrote, wait
}

// The writer does not trust a cached status equal to the new one when its
// own last write was different: the cache may not show that write yet. Nor
// does it write again what it last wrote while the cache has not moved.
func TestStatusWriterDoesNotTrustAStaleCache(t *testing.T) {
	f := newStatusFixture(t, nil)
	g := f.g
	write := func(version string, cached, next appsv1.DeploymentStatus) bool {
		wrote, _ := f.write(version, cached, next, "", 0)
		return wrote
	}
	one, two := appsv1.DeploymentStatus{Replicas: 1}, appsv1.DeploymentStatus{Replicas: 2}

	g.Expect(write("1", one, one)).To(BeFalse(), "nothing new, nothing written before: no write")
	g.Expect(write("1", one, two)).To(BeTrue())
	g.Expect(write("2", two, two)).To(BeFalse(), "the cache caught up with the write")
	g.Expect(write("2", two, one)).To(BeTrue())
	g.Expect(write("2", two, one)).To(BeFalse(), "the cache has not moved since 1 was written over it: it lags behind that write")
	g.Expect(write("3", two, one)).To(BeTrue(), "the cache moved on and shows 2 although 1 was last written: another writer, undone")
	g.Expect(write("4", one, two)).To(BeTrue(), "a cache showing 1 while 1 was last written: 2 is new")
	g.Expect(write("4", one, one)).To(BeTrue(), "equal to a cache that may be stale, but the last write was 2: write")
	g.Expect(f.patches).To(Equal(5))
}

// A status with the summary of the last write waits out the interval; one
// with another summary is written at once.
func TestStatusWriterThrottlesProgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	f := newStatusFixture(t, clk)
	g := f.g
	const interval = time.Second
	step := func(d time.Duration) { clk.SetTime(clk.Now().Add(d)) }
	status := func(n int32) appsv1.DeploymentStatus { return appsv1.DeploymentStatus{Replicas: n} }

	wrote, _ := f.write("1", status(0), status(1), "rolling", interval)
	g.Expect(wrote).To(BeTrue(), "the first status is written at once")
	step(100 * time.Millisecond)
	wrote, wait := f.write("2", status(1), status(2), "rolling", interval)
	g.Expect(wrote).To(BeFalse(), "progress right after a write waits")
	g.Expect(wait).To(Equal(900 * time.Millisecond))
	step(100 * time.Millisecond)
	wrote, wait = f.write("2", status(1), status(3), "ready", interval)
	g.Expect(wrote).To(BeTrue(), "another summary is urgent")
	g.Expect(wait).To(BeZero())
	step(500 * time.Millisecond)
	wrote, wait = f.write("3", status(3), status(4), "ready", interval)
	g.Expect(wrote).To(BeFalse())
	g.Expect(wait).To(Equal(500 * time.Millisecond))
	step(500 * time.Millisecond)
	wrote, _ = f.write("3", status(3), status(4), "ready", interval)
	g.Expect(wrote).To(BeTrue(), "once the interval has passed")
	wrote, _ = f.write("3", status(3), status(4), "ready", 0)
	g.Expect(wrote).To(BeFalse(), "what was just written over the same cached version is not written again")
	g.Expect(f.patches).To(Equal(3))
}

// A status patch answered NotFound is nothing to report for an object
// deleted meanwhile, and an error for one that exists: its resource serves
// no status (a CRD without the status subresource applied over ours).
func TestStatusWriterTellsAMissingStatusSubresourceFromADeletion(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	stored := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "u1"}}
	// The API server answers a status patch of a resource without the
	// subresource NotFound, as for an object that does not exist.
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).Build(), interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			return apierrors.NewNotFound(appsv1.Resource("deployments"), obj.GetName())
		},
	})
	w := NewStatusWriter(c)
	updated := stored.DeepCopy()
	updated.Status.Replicas = 1
	_, err := w.Patch(context.Background(), stored, updated, stored.Status, updated.Status)
	g.Expect(err).To(MatchError(ContainSubstring("serves no status")))

	// Deleted, while the cache still shows it: the API server tells.
	live := fake.NewClientBuilder().WithScheme(scheme).Build()
	wrote, err := w.ReadingLiveFrom(live).Patch(context.Background(), stored, updated, stored.Status, updated.Status)
	g.Expect(err).NotTo(HaveOccurred(), "deleted meanwhile")
	g.Expect(wrote).To(BeFalse())

	// Deleted and made again under the name: not the object written.
	again := stored.DeepCopy()
	again.UID, again.ResourceVersion = "u2", ""
	g.Expect(live.Create(context.Background(), again)).To(Succeed())
	_, err = w.Patch(context.Background(), stored, updated, stored.Status, updated.Status)
	g.Expect(err).NotTo(HaveOccurred(), "another object of the name")
}
