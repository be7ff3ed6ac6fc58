package kit

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PendingFirst enqueues a controller's own objects, of kind T, as
// handler.EnqueueRequestForObject does, except that an object in the
// initial list with work pending keeps the default priority instead of the
// initial list's low one. Work is pending when the status does not describe
// the current generation (observedGeneration reads the generation it
// describes), or when the object is being deleted.
//
// controller-runtime queues the objects a controller lists when it starts
// behind every change it sees later: they are checks of what a previous
// process already did. But the initial list also holds what changed while
// no operator ran (a rolling update of the operator), and what was created
// between the operator's caches syncing and its controllers starting: an
// object created then would wait for the check of every other object. Such
// objects are work, not checks.
func PendingFirst[T client.Object](observedGeneration func(T) int64) handler.EventHandler {
	return pendingFirstHandler{inner: &handler.EnqueueRequestForObject{}, pending: func(o client.Object) bool {
		t, ok := o.(T)
		return !ok || observedGeneration(t) != o.GetGeneration() || !o.GetDeletionTimestamp().IsZero()
	}}
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

// AsDueWork queues every reconcile h asks for at DueWorkPriority: the
// objects listed at start-up and those created or changed later, for a kind
// whose objects hold work that falls due by the clock (LoopOptions.TimedWork).
// Nothing but its own first reconcile starts such an object's schedule, and
// under a steady stream of due work a lower priority would never be
// reached: an object created while a thousand others run every minute would
// wait with no status and no run.
func AsDueWork(h handler.EventHandler) handler.EventHandler {
	return asDueWork{EventHandler: h}
}

type asDueWork struct {
	handler.EventHandler
}

func (h asDueWork) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.IsInInitialList = false
	h.EventHandler.Create(ctx, e, withDefaultPriority(q, DueWorkPriority))
}

func (h asDueWork) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Update(ctx, e, withDefaultPriority(q, DueWorkPriority))
}

func (h asDueWork) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Delete(ctx, e, withDefaultPriority(q, DueWorkPriority))
}

func (h asDueWork) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Generic(ctx, e, withDefaultPriority(q, DueWorkPriority))
}
