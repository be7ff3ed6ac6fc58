package children

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pendingCreateTimeout bounds how long a child created by the operator is
// taken to exist while the cache does not show it. The cache normally shows
// it within milliseconds; past the bound, a miss sends Ensure down the
// ordinary path (create, and on AlreadyExists a live read).
const pendingCreateTimeout = 30 * time.Second

// pendingCreates remembers the children the operator created until its
// cache has seen them. An owner's next reconcile can come before that:
// another child's event (its Deployment appeared) enqueues the owner while
// the watch of this child's type has not delivered the create yet. Without
// this memory that reconcile would create the child again, get
// AlreadyExists and read it from the API server: a write and an uncached
// read for nothing.
//
// An entry ends with the first event the cache's informer delivers for the
// child (added, updated or deleted: after any of them the cache answers for
// it), or after pendingCreateTimeout. A child created and deleted by
// someone else while the informer's watch was down is never reported; its
// entry makes Ensure take it for existing until the timeout, and the
// owner's next reconcile after it creates the child again.
type pendingCreates struct {
	clock clock.PassiveClock
	// informers is the cache whose events end entries; nil in tests, which
	// call observed themselves.
	informers cache.Informers

	mu      sync.Mutex
	entries map[pendingKey]pendingCreate

	// watchMu serializes the registrations with the informers; watched
	// holds the child types whose informer reports to observed.
	watchMu sync.Mutex
	watched map[schema.GroupVersionKind]bool
	// deleted, when set, is told of every child the informers report
	// deleted, for the Manager to forget what it remembers of it.
	deleted func(client.Object)
}

type pendingKey struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
}

type pendingCreate struct {
	object client.Object
	at     time.Time
}

func newPendingCreates(informers cache.Informers, clk clock.PassiveClock) *pendingCreates {
	return &pendingCreates{
		clock:     clk,
		informers: informers,
		entries:   map[pendingKey]pendingCreate{},
		watched:   map[schema.GroupVersionKind]bool{},
	}
}

// expect opens the entry of a child about to be created: opened before the
// create call, so that an event the informer delivers before the call
// returns (the child created, and deleted at once by someone) ends it. It
// fails only when the informer of the child's type cannot be told to report
// its events; the child is then not remembered.
func (p *pendingCreates) expect(ctx context.Context, gvk schema.GroupVersionKind, child client.Object) error {
	if err := p.watch(ctx, gvk, child); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries[pendingKey{gvk, client.ObjectKeyFromObject(child)}] = pendingCreate{at: p.clock.Now()}
	return nil
}

// created fills the entry of created with the API server's answer, unless
// the cache has reported the child meanwhile.
func (p *pendingCreates) created(gvk schema.GroupVersionKind, created client.Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := pendingKey{gvk, client.ObjectKeyFromObject(created)}
	if entry, ok := p.entries[k]; ok {
		entry.object = created.DeepCopyObject().(client.Object)
		p.entries[k] = entry
	}
}

// watch makes the informer of gvk end the entries of the objects it
// reports, and tell deleted of those deleted, once per type.
func (p *pendingCreates) watch(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object) error {
	if p.informers == nil {
		return nil
	}
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	if p.watched[gvk] {
		return nil
	}
	informer, err := p.informers.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("informer of %s: %w", gvk.Kind, err)
	}
	seen := func(obj any) client.Object {
		if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		o, ok := obj.(client.Object)
		if ok {
			p.observed(gvk, client.ObjectKeyFromObject(o))
		}
		return o
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj) },
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(obj any) {
			if o := seen(obj); o != nil && p.deleted != nil {
				p.deleted(o)
			}
		},
	}); err != nil {
		return fmt.Errorf("watch the informer of %s: %w", gvk.Kind, err)
	}
	p.watched[gvk] = true
	return nil
}

// observed ends the entry of key: the cache has seen the object, or the
// create failed.
func (p *pendingCreates) observed(gvk schema.GroupVersionKind, key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.entries, pendingKey{gvk, key})
}

// fill copies the remembered child of key into live and reports whether
// there was one: the cache does not show a child that the operator created
// moments ago and that the cache has not reported since.
func (p *pendingCreates) fill(gvk schema.GroupVersionKind, key types.NamespacedName, live client.Object) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := pendingKey{gvk, key}
	entry, ok := p.entries[k]
	if !ok || entry.object == nil {
		return false
	}
	if p.clock.Since(entry.at) > pendingCreateTimeout {
		delete(p.entries, k)
		return false
	}
	target, source := reflect.ValueOf(live), reflect.ValueOf(entry.object.DeepCopyObject())
	if target.Type() != source.Type() {
		return false
	}
	target.Elem().Set(source.Elem())
	return true
}
