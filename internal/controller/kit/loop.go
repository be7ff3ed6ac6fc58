package kit

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/platform"
)

// Resource is the pointer type P of a kind's Go type T.
type Resource[T any] interface {
	*T
	client.Object
}

// Status is the pointer type of a kind's status type S: the loop reads the
// conditions and the observed generation of every kind the same way.
type Status[S any] interface {
	*S
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
}

// Kind is a kind's own part of its reconcile.
type Kind[P client.Object, S any] interface {
	// Sync brings the children of obj, which is not being deleted, to what
	// its spec asks for, and says what obj's status must be from what it
	// observed.
	Sync(ctx context.Context, obj P) Outcome[S]
}

// Finalizing is a Kind with work to do when one of its objects is deleted.
type Finalizing[P client.Object, S any] interface {
	// Finalizer is the kind's finalizer, "" for a kind that has none but
	// must still act on a deletion (release what another controller holds).
	Finalizer() string
	// NeedsFinalizer tells whether obj must carry the finalizer now: the
	// loop adds it before Sync makes anything, and removes it when obj no
	// longer needs it.
	NeedsFinalizer(obj P) bool
	// Finalize runs while obj is being deleted and carries the finalizer
	// (always, for a kind without one). done releases the finalizer.
	Finalize(ctx context.Context, obj P) (out Outcome[S], done bool)
}

// Outcome is what one reconcile of an object did and must report.
type Outcome[S any] struct {
	// Status is the object's new status, computed from what was observed;
	// nil writes none.
	Status *S
	// Err is what failed, wrapped with its context.
	Err error
	// SpecRefused is true when every error in Err is the API server
	// refusing what the spec builds: the same spec would meet it again, so
	// it is retried at After only, not with backoff.
	SpecRefused bool
	// After is when to come back without a watch event (a schedule, a
	// renewal, a recheck), 0 for no time. A failure keeps it (Retries).
	After time.Duration
	// Due says that After is when work falls due (a scheduled run): the
	// reconcile then comes back at DueWorkPriority.
	Due bool
}

// staleRetry is how soon a reconcile whose guarded status write found the
// object changed comes back.
const staleRetry = 200 * time.Millisecond

// Soonest returns the earlier of two requeue times, 0 meaning none.
func Soonest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Base is what every kind's reconciler works with, made the same way for
// every kind by NewBase.
type Base struct {
	// Client reads from the operator's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, for what the cache does not hold.
	APIReader client.Reader
	// Children creates, updates and prunes the kind's children.
	Children *children.Manager
	// Recorder emits the kind's events.
	Recorder events.EventRecorder
	// Clock is the only source of time: schedules, deadlines and stamps.
	Clock clock.PassiveClock
}

// NewBase returns the Base of the reconciler of kind in mgr, reading from
// mgr's cache and writing with c: mgr's client, or a wrapper that counts
// writes in tests. A nil clk is the real clock.
func NewBase(mgr ctrl.Manager, c client.Client, kind string, clk clock.PassiveClock) Base {
	if clk == nil {
		clk = clock.RealClock{}
	}
	recorder := mgr.GetEventRecorder(platform.Name)
	return Base{
		Client:    c,
		APIReader: mgr.GetAPIReader(),
		Children:  children.NewManagerWithClient(mgr, c, kind, recorder),
		Recorder:  recorder,
		Clock:     clk,
	}
}

// LoopOptions are the settings of one kind's Loop.
type LoopOptions[S any] struct {
	// Name is the controller's, lower case ("website"): it names the
	// controller, the key of its objects in logs and its metrics' kind.
	Name string
	// Kind is the kind the loop reconciles.
	Kind schema.GroupKind
	// Namespaced is true for a namespaced kind.
	Namespaced bool
	// ReadyCondition and DegradedCondition are the kind's condition types
	// that say it works and that something needs a person.
	ReadyCondition, DegradedCondition string
	// Conditions are every condition type of the kind, for the metrics.
	Conditions []string
	// ProgressInterval, when set, is how long a status change that is only
	// progress may wait: a change of what Summary returns is written at
	// once, any other at most once per interval (children.StatusWriter).
	ProgressInterval time.Duration
	Summary          func(*S) string
	// HoldFirstProgress lets a new object's first status wait, while it
	// says only that work is in progress (neither ready nor degraded),
	// until ProgressInterval after the object's creation: an object that
	// becomes ready within it gets one status write instead of two, and
	// the watchers of its kind one event fewer. Not for a kind whose status
	// holds decisions (GuardStatus).
	HoldFirstProgress bool
	// Gone, when set, is told about an object that no longer exists.
	Gone func(types.NamespacedName)
	// GuardStatus writes a status only over the version of the object it
	// was computed from (children.StatusWriter.Guarded), for a kind whose
	// status holds decisions: a reconcile that read a stale copy computes
	// again instead of undoing a newer decision.
	GuardStatus bool
	// TimedWork is true for a kind whose objects hold work that falls due
	// by the clock (a schedule): the reconciles their own events ask for
	// (listed at start-up, created, changed) are queued at DueWorkPriority,
	// not behind everything else, since nothing wakes them at their time
	// before their first reconcile, and a busy queue of due work would
	// otherwise never let them through (AsDueWork).
	TimedWork bool
}

// Loop is the reconcile skeleton of one kind, T with pointer type P and
// status S (pointer type PS).
type Loop[T any, P Resource[T], S any, PS Status[S]] struct {
	// Base is the kind's reconciler's own, so that what a test changes in
	// it holds for the loop too.
	*Base
	kind    Kind[P, S]
	status  func(P) PS
	opts    LoopOptions[S]
	writer  *children.StatusWriter
	retries *Retries
	ready   *readiness
}

// NewLoop returns the loop of kind, whose objects' status is status(obj).
func NewLoop[T any, P Resource[T], S any, PS Status[S]](base *Base, kind Kind[P, S], status func(P) PS, opts LoopOptions[S]) *Loop[T, P, S, PS] {
	writer := children.NewStatusWriterWithClock(base.Client, base.Clock).ReadingLiveFrom(base.APIReader)
	if opts.GuardStatus {
		writer = writer.Guarded()
	}
	return &Loop[T, P, S, PS]{
		Base:   base,
		kind:   kind,
		status: status,
		opts:   opts,
		writer: writer,
		ready:  newReadiness(base.Clock, opts.Name, opts.ReadyCondition),
	}
}

// Reconcile reconciles the object req names: see the package comment.
func (l *Loop[T, P, S, PS]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := P(new(T))
	if err := l.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("get %s: %w", l.opts.Name, err)
		}
		l.ready.forget(req.NamespacedName)
		if l.opts.Gone != nil {
			l.opts.Gone(req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}
	finalizing, _ := l.kind.(Finalizing[P, S])
	if !obj.GetDeletionTimestamp().IsZero() {
		return l.finalize(ctx, req, obj, finalizing)
	}
	if finalizing != nil {
		if err := l.syncFinalizer(ctx, obj, finalizing); err != nil {
			return l.retries.Result(req, err, true, 0)
		}
	}
	return l.report(ctx, req, obj, l.kind.Sync(ctx, obj))
}

// finalize handles an object being deleted.
func (l *Loop[T, P, S, PS]) finalize(ctx context.Context, req ctrl.Request, obj P, kind Finalizing[P, S]) (ctrl.Result, error) {
	if kind == nil || (kind.Finalizer() != "" && !controllerutil.ContainsFinalizer(obj, kind.Finalizer())) {
		// Nothing of the operator's holds it: the garbage collector takes
		// its children through their owner references.
		l.writer.Forget(obj)
		return ctrl.Result{}, nil
	}
	out, done := kind.Finalize(ctx, obj)
	if !done || kind.Finalizer() == "" || out.Err != nil {
		return l.report(ctx, req, obj, out)
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(P), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, kind.Finalizer())
	if err := l.Client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		return l.retries.Result(req, fmt.Errorf("remove the finalizer of %s %s: %w", l.opts.Name, obj.GetName(), err), true, 0)
	}
	l.writer.Forget(obj)
	return l.retries.Result(req, nil, true, 0)
}

// syncFinalizer adds the kind's finalizer to obj, or removes it, as obj
// needs it now.
func (l *Loop[T, P, S, PS]) syncFinalizer(ctx context.Context, obj P, kind Finalizing[P, S]) error {
	name := kind.Finalizer()
	want := kind.NeedsFinalizer(obj)
	if name == "" || controllerutil.ContainsFinalizer(obj, name) == want {
		return nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(P), client.MergeFromWithOptimisticLock{})
	if want {
		controllerutil.AddFinalizer(obj, name)
	} else {
		controllerutil.RemoveFinalizer(obj, name)
	}
	if err := l.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("update the finalizer of %s %s: %w", l.opts.Name, obj.GetName(), err)
	}
	return nil
}

// report ends a reconcile: the Degraded event, the status write, the
// readiness metric and the retry plan.
func (l *Loop[T, P, S, PS]) report(ctx context.Context, req ctrl.Request, obj P, out Outcome[S]) (ctrl.Result, error) {
	if errors.Is(out.Err, platform.ErrNotLeader) {
		return StandDown(ctx, out.Err)
	}
	if out.Status == nil {
		return l.result(req, out, out.Err, !out.SpecRefused, out.After)
	}
	l.recordDegraded(obj, out.Status)
	after := out.After
	due, err := l.writeStatus(ctx, obj, out.Status)
	after = Soonest(after, due)
	if errors.Is(err, children.ErrStale) {
		// The cache will hold the newer object in a moment: decide again
		// from it.
		ctrl.LoggerFrom(ctx).V(1).Info("Status not written: the object changed since it was read")
		return l.result(req, out, out.Err, !out.SpecRefused, Soonest(after, staleRetry))
	}
	if err != nil {
		// A failed status write does not cancel what the reconcile asked
		// to come back for.
		return l.result(req, out, errors.Join(out.Err, err), true, after)
	}
	l.ready.observe(obj, l.status(obj).GetConditions(), PS(out.Status).GetConditions())
	return l.result(req, out, out.Err, !out.SpecRefused, after)
}

// result is the retry plan of a reconcile that comes back at after, at
// DueWorkPriority when that is when work falls due.
func (l *Loop[T, P, S, PS]) result(req ctrl.Request, out Outcome[S], err error, retry bool, after time.Duration) (ctrl.Result, error) {
	res, err := l.retries.Result(req, err, retry, after)
	return withDuePriority(res, out.Due, out.After, after), err
}

// withDuePriority gives res DueWorkPriority when the reconcile comes back
// at dueAfter, the time work falls due, and leaves it otherwise (sooner,
// for a stale read or a held-back status write).
func withDuePriority(res ctrl.Result, due bool, dueAfter, after time.Duration) ctrl.Result {
	if due && after > 0 && after == dueAfter {
		res.Priority = ptr.To(DueWorkPriority)
	}
	return res
}

// writeStatus writes status to obj when it differs from what obj has, or
// from what this process last wrote; it returns when to come back for a
// change that it held back.
func (l *Loop[T, P, S, PS]) writeStatus(ctx context.Context, obj P, status *S) (time.Duration, error) {
	updated := obj.DeepCopyObject().(P)
	*l.status(updated) = *status
	if l.opts.HoldFirstProgress {
		if wait := firstProgressHold(obj.GetCreationTimestamp().Time, l.Clock.Now(), l.opts.ProgressInterval,
			l.status(obj).GetConditions(), PS(status).GetConditions(), l.opts.ReadyCondition, l.opts.DegradedCondition); wait > 0 {
			return wait, nil
		}
	}
	var summary string
	if l.opts.Summary != nil {
		summary = l.opts.Summary(status)
	}
	wrote, due, err := l.writer.PatchThrottled(ctx, obj, updated, *l.status(obj), *status, summary, l.opts.ProgressInterval)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", l.opts.Name, obj.GetName(), err)
	}
	if wrote {
		conditions := PS(status).GetConditions()
		ctrl.LoggerFrom(ctx).V(1).Info("Status updated",
			"ready", reasonOf(conditions, l.opts.ReadyCondition), "degraded", reasonOf(conditions, l.opts.DegradedCondition))
	}
	return due, nil
}

// firstProgressHold is how long the first status of an object created at
// created may still wait at now (see LoopOptions.HoldFirstProgress): 0
// once it has a status with conditions, or when the new conditions say
// it is ready or degraded, which show at once.
func firstProgressHold(created, now time.Time, interval time.Duration, written, next []metav1.Condition, ready, degraded string) time.Duration {
	if interval <= 0 || len(written) > 0 || meta.IsStatusConditionTrue(next, ready) || meta.IsStatusConditionTrue(next, degraded) {
		return 0
	}
	return max(created.Add(interval).Sub(now), 0)
}

// recordDegraded emits a Warning when obj becomes Degraded, or Degraded for
// another cause, not on every reconcile while it stays so.
func (l *Loop[T, P, S, PS]) recordDegraded(obj P, status *S) {
	now := meta.FindStatusCondition(PS(status).GetConditions(), l.opts.DegradedCondition)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	previous := meta.FindStatusCondition(l.status(obj).GetConditions(), l.opts.DegradedCondition)
	if previous != nil && previous.Status == now.Status && previous.Reason == now.Reason && previous.Message == now.Message {
		return
	}
	l.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, now.Reason, "Reconcile", "%s", now.Message)
}

func reasonOf(conditions []metav1.Condition, conditionType string) string {
	if c := meta.FindStatusCondition(conditions, conditionType); c != nil {
		return c.Reason
	}
	return ""
}

// StandDown ends a reconcile that met platform.ErrNotLeader: without an
// error, which controller-runtime would log as a failure with a stack trace
// although nothing failed, and with a retry in a second in case this
// replica keeps its lease after all. The leader does the work.
func StandDown(ctx context.Context, err error) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("Reconcile stopped: this replica may no longer hold the leader election lease", "error", err.Error())
	return ctrl.Result{RequeueAfter: time.Second}, nil
}
