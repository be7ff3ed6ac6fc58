package children

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// lagFixture is a children manager over a fake API server whose cache can
// lag behind it: while lagging, the cache does not show the child.
type lagFixture struct {
	g       Gomega
	api     client.Client
	manager *Manager
	clock   *clocktesting.FakeClock
	owner   *corev1.ConfigMap
	lagging bool
	// creates and liveReads count the child's create calls and the reads
	// that bypass the cache.
	creates, liveReads int
}

func newLagFixture(t *testing.T) *lagFixture {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	f := &lagFixture{
		g:     g,
		clock: clocktesting.NewFakeClock(time.Now()),
		owner: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "ns", UID: "owner-uid"}},
	}
	f.api = fake.NewClientBuilder().WithScheme(scheme).Build()
	cached := interceptor.NewClient(f.api.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if f.lagging {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			f.creates++
			return c.Create(ctx, obj, opts...)
		},
	})
	liveReader := interceptor.NewClient(f.api.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			f.liveReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	f.manager = newManager(cached, liveReader, nil, scheme, events.NewFakeRecorder(10), "Website")
	f.manager.pending = newPendingCreates(nil, f.clock)
	return f
}

func (f *lagFixture) ensure() (Result, *corev1.Service) {
	desired := corev1ac.Service("site", "ns").
		WithLabels(ManagedLabels()).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("ConfigMap").
			WithName(f.owner.Name).WithUID(f.owner.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithPort(80)))
	live := &corev1.Service{}
	r := f.manager.Ensure(context.Background(), f.owner, desired, live)
	f.g.Expect(r.Err).NotTo(HaveOccurred())
	return r, live
}

var servicesGVK = corev1.SchemeGroupVersion.WithKind("Service")

// A reconcile that runs before the cache has seen a child created by the
// one before it (another child's event came first) neither creates it again
// nor reads it from the API server: it exists as the create answered.
func TestAChildCreatedButNotYetCachedIsNotCreatedAgain(t *testing.T) {
	f := newLagFixture(t)
	first, created := f.ensure()
	f.g.Expect(first.Action).To(Equal(Created))

	f.lagging = true
	second, live := f.ensure()
	f.g.Expect(second.Action).To(Equal(Unchanged))
	f.g.Expect(second.Exists).To(BeTrue())
	f.g.Expect(live.ResourceVersion).To(Equal(created.ResourceVersion), "the child as the create answered")
	f.g.Expect(live.Spec.Ports).To(HaveLen(1))
	f.g.Expect(f.creates).To(Equal(1), "create calls")
	f.g.Expect(f.liveReads).To(Equal(0), "reads that bypass the cache")
}

// Once the cache has reported the child, a miss means it is gone: someone
// deleted it, and it is created again.
func TestAChildTheCacheReportedAndThenMissesIsCreatedAgain(t *testing.T) {
	f := newLagFixture(t)
	first, created := f.ensure()
	f.g.Expect(first.Action).To(Equal(Created))
	f.g.Expect(f.api.Delete(context.Background(), created)).To(Succeed())
	f.manager.pending.observed(servicesGVK, client.ObjectKeyFromObject(created))

	f.lagging = true
	again, _ := f.ensure()
	f.g.Expect(again.Action).To(Equal(Created))
	f.g.Expect(f.creates).To(Equal(2), "create calls")
}

// Past pendingCreateTimeout without a word from the cache, Ensure takes the
// ordinary path: create, AlreadyExists, a live read that finds its own
// child.
func TestAfterTheTimeoutAMissTakesTheOrdinaryPath(t *testing.T) {
	f := newLagFixture(t)
	first, _ := f.ensure()
	f.g.Expect(first.Action).To(Equal(Created))

	f.lagging = true
	f.clock.Step(pendingCreateTimeout + time.Second)
	again, _ := f.ensure()
	f.g.Expect(again.Action).To(Equal(Unchanged))
	f.g.Expect(f.creates).To(Equal(2), "create calls")
	f.g.Expect(f.liveReads).To(Equal(1), "reads that bypass the cache")
}

// An event the informer delivers while the create call is still under way
// ends the entry: the child may already be gone again.
func TestAnEventDuringTheCreateCallEndsTheEntry(t *testing.T) {
	p := newPendingCreates(nil, clocktesting.NewFakeClock(time.Now()))
	child := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "ns", ResourceVersion: "1"}}
	key := client.ObjectKeyFromObject(child)
	g := NewWithT(t)
	g.Expect(p.expect(context.Background(), servicesGVK, child)).To(Succeed())
	p.observed(servicesGVK, key)
	p.created(servicesGVK, child)
	g.Expect(p.fill(servicesGVK, key, &corev1.Service{})).To(BeFalse())

	g.Expect(p.expect(context.Background(), servicesGVK, child)).To(Succeed())
	p.created(servicesGVK, child)
	live := &corev1.Service{}
	g.Expect(p.fill(servicesGVK, key, live)).To(BeTrue())
	g.Expect(live.ResourceVersion).To(Equal("1"))
}

// The informer of the child's type ends entries by itself: whatever event
// it delivers for the child (added, updated or deleted), the cache answers
// for the child from then on. The handler is registered once per child
// type, not once per create.
func TestTheInformersEventsEndEntries(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	informers := &countingInformers{FakeInformers: &informertest.FakeInformers{Scheme: scheme}}
	p := newPendingCreates(informers, clocktesting.NewFakeClock(time.Now()))
	informer, err := informers.FakeInformerFor(context.Background(), &corev1.Service{})
	g.Expect(err).NotTo(HaveOccurred())

	deliveries := map[string]func(child *corev1.Service){
		"added":   func(child *corev1.Service) { informer.Add(child) },
		"updated": func(child *corev1.Service) { informer.Update(child, child) },
		"deleted": func(child *corev1.Service) { informer.Delete(child) },
	}
	for name, deliver := range deliveries {
		child := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "site-" + name, Namespace: "ns", ResourceVersion: "1"}}
		key := client.ObjectKeyFromObject(child)
		g.Expect(p.expect(context.Background(), servicesGVK, child)).To(Succeed())
		p.created(servicesGVK, child)
		g.Expect(p.fill(servicesGVK, key, &corev1.Service{})).To(BeTrue(), "%s: before the event", name)

		// Another child's event leaves the entry alone.
		deliver(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}})
		g.Expect(p.fill(servicesGVK, key, &corev1.Service{})).To(BeTrue(), "%s: after another child's event", name)

		deliver(child)
		g.Expect(p.fill(servicesGVK, key, &corev1.Service{})).To(BeFalse(), "%s: after the event", name)
	}
	g.Expect(informers.gets).To(Equal(1), "informers asked for, to register the handler")
}

// countingInformers counts the informers asked for.
type countingInformers struct {
	*informertest.FakeInformers
	gets int
}

func (c *countingInformers) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.gets++
	return c.FakeInformers.GetInformer(ctx, obj, opts...)
}
