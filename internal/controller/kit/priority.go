package kit

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ChildEventPriority is the queue priority of a reconcile asked for by a
// change of one of an object's children (a Deployment became available, a
// pod failed, someone edited or deleted the child), above the default 0 of
// a change of the object itself.
//
// When many objects are created at once, the queue holds one reconcile for
// each of them, first come first served, and each builds its children. A
// child changing meanwhile brings news about an object already built: its
// reconcile writes what is now true (Ready) or puts back what someone
// changed, and mostly costs one write. Behind the queue of new objects it
// would wait until every other object was built, and the status of the
// first would lie for as long. Children of objects listed at start-up keep
// controller-runtime's low priority: nothing changed while the operator was
// away that their reconcile would not find anyway.
const ChildEventPriority = 10

// DueWorkPriority is the queue priority of a reconcile that comes back at
// the time its object set for work that falls due then (a BackupJob's
// scheduled run, Outcome.Due), above ChildEventPriority: the news of the
// children of a thousand runs started a moment ago (snapshots turning
// ready, Jobs completing) is bookkeeping that can wait a few seconds, and
// would otherwise start the runs due now late.
const DueWorkPriority = 20

// WithChildEventPriority enqueues what h enqueues at ChildEventPriority,
// unless h sets a priority of its own (the low priority of the initial
// list). It changes nothing when the controller's queue is not a priority
// queue.
func WithChildEventPriority(h handler.EventHandler) handler.EventHandler {
	return childEventHandler{inner: h}
}

type childEventHandler struct {
	inner handler.EventHandler
}

func (h childEventHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Create(ctx, e, withDefaultPriority(q, ChildEventPriority))
}

func (h childEventHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Update(ctx, e, withDefaultPriority(q, ChildEventPriority))
}

func (h childEventHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Delete(ctx, e, withDefaultPriority(q, ChildEventPriority))
}

func (h childEventHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.inner.Generic(ctx, e, withDefaultPriority(q, ChildEventPriority))
}

// withDefaultPriority returns q with priority as the priority of every item
// added without one.
func withDefaultPriority(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority int) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return defaultPriorityQueue{PriorityQueue: pq, priority: priority}
}

// defaultPriorityQueue is a priority queue whose items default to priority.
// It is itself a priority queue, so that controller-runtime's handlers can
// still lower the priority of the initial list.
type defaultPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (q defaultPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q defaultPriorityQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q defaultPriorityQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q defaultPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = &q.priority
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
