package kit

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

func pod(resourceVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "site-abc", ResourceVersion: resourceVersion}}
}

// ownerOfPod maps every pod to the object "built".
var ownerOfPod = handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{request("built")}
})

// next takes the queue's next item and its priority.
func next(q priorityqueue.PriorityQueue[reconcile.Request]) (string, int) {
	item, priority, _ := q.GetWithPriority()
	q.Done(item)
	return item.Name, priority
}

func TestAChildsChangeGoesBeforeObjectsWaitingToBeBuilt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("child-change-first")
	defer q.ShutDown()

	// Objects created before, each waiting for its first reconcile.
	q.Add(request("new-1"))
	q.Add(request("new-2"))
	WithChildEventPriority(ownerOfPod).Update(ctx, event.UpdateEvent{ObjectOld: pod("1"), ObjectNew: pod("2")}, q)

	name, priority := next(q)
	g.Expect(name).To(Equal("built"))
	g.Expect(priority).To(Equal(ChildEventPriority))
	for _, want := range []string{"new-1", "new-2"} {
		name, priority = next(q)
		g.Expect(name).To(Equal(want))
		g.Expect(priority).To(BeZero())
	}
}

func TestChildrenListedAtStartKeepTheLowPriority(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("child-initial-list")
	defer q.ShutDown()

	WithChildEventPriority(ownerOfPod).Create(ctx, event.CreateEvent{Object: pod("1"), IsInInitialList: true}, q)
	q.Add(request("changed"))

	name, priority := next(q)
	g.Expect(name).To(Equal("changed"))
	g.Expect(priority).To(BeZero())
	name, priority = next(q)
	g.Expect(name).To(Equal("built"))
	g.Expect(priority).To(Equal(handler.LowPriority))
}

func TestChildEventPriorityLeavesAPlainQueueAlone(t *testing.T) {
	g := NewWithT(t)
	plain := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer plain.ShutDown()
	g.Expect(withDefaultPriority(plain, ChildEventPriority)).To(BeIdenticalTo(plain))
}

// Of the objects a controller lists at start, those with work pending (a
// status behind the spec, a deletion) keep the default priority; those that
// only need a check go behind.
func TestPendingObjectsListedAtStartGoBeforeTheChecks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("pending-first")
	defer q.ShutDown()
	object := func(name string, generation int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation}}
	}
	observed := map[string]int64{"checked-1": 1, "checked-2": 3, "changed": 1, "created": 0, "deleting": 1}
	h := PendingFirst(func(p *corev1.Pod) int64 { return observed[p.Name] })

	h.Create(ctx, event.CreateEvent{Object: object("checked-1", 1), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: object("checked-2", 3), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: object("changed", 2), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: object("created", 1), IsInInitialList: true}, q)
	deleting := object("deleting", 1)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	h.Create(ctx, event.CreateEvent{Object: deleting, IsInInitialList: true}, q)

	got := map[string]int{}
	for range 5 {
		name, priority := next(q)
		got[name] = priority
	}
	g.Expect(got).To(Equal(map[string]int{"changed": 0, "created": 0, "deleting": 0, "checked-1": handler.LowPriority, "checked-2": handler.LowPriority}))
}

// A reconcile that comes back when its work falls due (a scheduled run)
// goes before the news of children, which goes before the rest.
func TestDueWorkGoesBeforeChildrensNews(t *testing.T) {
	g := NewWithT(t)
	q := priorityqueue.New[reconcile.Request]("due-first")
	defer q.ShutDown()

	q.Add(request("changed"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(ChildEventPriority)}, request("news"))
	due := withDuePriority(ctrl.Result{RequeueAfter: time.Minute}, true, time.Minute, time.Minute)
	q.AddWithOpts(priorityqueue.AddOpts{Priority: due.Priority}, request("due"))

	for _, want := range []string{"due", "news", "changed"} {
		name, _ := next(q)
		g.Expect(name).To(Equal(want))
	}
}

func TestDuePriorityOnlyWhenComingBackAtTheDueTime(t *testing.T) {
	for name, tc := range map[string]struct {
		due             bool
		dueAfter, after time.Duration
		want            *int
	}{
		"at the due time":               {due: true, dueAfter: time.Minute, after: time.Minute, want: ptr.To(DueWorkPriority)},
		"sooner, for a stale read":      {due: true, dueAfter: time.Minute, after: 200 * time.Millisecond},
		"a time that is not a due time": {dueAfter: time.Minute, after: time.Minute},
		"no time":                       {due: true},
	} {
		t.Run(name, func(t *testing.T) {
			got := withDuePriority(ctrl.Result{RequeueAfter: tc.after}, tc.due, tc.dueAfter, tc.after)
			NewWithT(t).Expect(got.Priority).To(Equal(tc.want))
		})
	}
}

// A kind whose objects hold timed work has its objects' own events, those
// listed at start-up and those created or changed later, queued with the
// due work, in the order they came, not behind it: under a steady stream of
// due work, a lower priority would never be reached, and those objects'
// schedules would never start.
func TestObjectsWithTimedWorkGoWithTheDueWork(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("timed-work")
	defer q.ShutDown()
	object := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}

	h := AsDueWork(PendingFirst(func(*corev1.Pod) int64 { return 0 }))
	h.Create(ctx, event.CreateEvent{Object: object("listed"), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: object("created")}, q)
	changedFrom, changedTo := object("changed"), object("changed")
	changedFrom.ResourceVersion, changedTo.ResourceVersion = "1", "2"
	h.Update(ctx, event.UpdateEvent{ObjectOld: changedFrom, ObjectNew: changedTo}, q)
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(DueWorkPriority)}, request("due"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(ChildEventPriority)}, request("news"))

	for _, want := range []string{"listed", "created", "changed", "due", "news"} {
		name, priority := next(q)
		g.Expect(name).To(Equal(want))
		if want != "news" {
			g.Expect(priority).To(Equal(DueWorkPriority))
		}
	}
}
