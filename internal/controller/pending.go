package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PendingFirst enqueues what h enqueues for a controller's own objects,
// except that an object in the initial list for which pending reports work
// to do keeps the default priority instead of the initial list's low one.
//
// controller-runtime queues the objects a controller lists when it starts
// behind every change it sees later: they are checks of what a previous
// process already did. But the initial list also holds what changed while
// no operator ran (a rolling update of the operator), and what was created
// between the operator's caches syncing and its controllers starting: a
// Website created then waited for the check of every other Website (4 s
// with 5000 of them). An object whose status does not describe its
// current generation, or that is being deleted, is work, not a check.
func PendingFirst(h handler.EventHandler, pending func(client.Object) bool) handler.EventHandler {
	return pendingFirstHandler{inner: h, pending: pending}
}

type pendingFirstHandler struct {
	inner   handler.EventHandler
	pending func(client.Object) bool
}

func (h pendingFirstHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.IsInInitialList && e.Object != nil && h.pending(e.Object) {
		e.IsInInitialList = false
	}
	h.inner.Create(ctx, e, q)
}

func (h pendingFirstHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Update(ctx, e, q)
}

func (h pendingFirstHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Delete(ctx, e, q)
}

func (h pendingFirstHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Generic(ctx, e, q)
}

// StatusBehind is the pending test of PendingFirst for a kind T whose
// status records the generation it describes, read by observed.
func StatusBehind[T client.Object](observed func(T) int64) func(client.Object) bool {
	return func(o client.Object) bool {
		t, ok := o.(T)
		return !ok || Unobserved(t, observed(t))
	}
}

// Unobserved reports whether an object with this generation, deletion and
// status.observedGeneration has work pending: its status does not yet
// describe its current spec, or it is being deleted.
func Unobserved(o client.Object, observedGeneration int64) bool {
	return observedGeneration != o.GetGeneration() || !o.GetDeletionTimestamp().IsZero()
}
