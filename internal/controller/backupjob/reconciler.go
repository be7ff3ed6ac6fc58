package backupjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/podsecurity"
)

const (
	// defaultRecheckInterval is how often a BackupJob looks again at what
	// no watch reports: a backup someone else's finalizer holds, a source
	// claim that does not exist yet (it carries none of the operator's
	// labels, so the operator does not watch it).
	defaultRecheckInterval = 30 * time.Second
	// defaultDeletionGracePeriod bounds how long the deletion of a
	// BackupJob with deletionPolicy Delete waits for its backups to go.
	defaultDeletionGracePeriod = time.Minute
)

// Reconciler starts each BackupJob's runs when its schedule says, records
// how they ended on their backups, runs restore drills, deletes the backups
// its retention policy no longer keeps, and reports all of it in status.
type Reconciler struct {
	// Client reads from the operator's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: the source claim, which the
	// cache does not hold, and a run's Job the cache may not have seen yet.
	APIReader client.Reader
	Children  *children.Manager
	Status    *children.StatusWriter
	Recorder  events.EventRecorder
	// Clock is the only source of time: schedules, deadlines and stamps.
	Clock clock.PassiveClock
	// SnapshotsServed tells whether the cluster serves VolumeSnapshots.
	SnapshotsServed bool
	// PodSecurityVersion is the version of the Pod Security Standards the
	// runs' and drills' pods are judged by: the API server's.
	PodSecurityVersion podsecurity.Version
	// RecheckInterval is how often a BackupJob waiting on something no
	// watch reports looks again (default 30 s, with 20% jitter).
	RecheckInterval time.Duration
	// DeletionGracePeriod bounds how long a BackupJob being deleted with
	// deletionPolicy Delete waits for its backups to go (default 1 min).
	DeletionGracePeriod time.Duration
	// MaxConcurrentReconciles is the number of BackupJobs reconciled at
	// once.
	MaxConcurrentReconciles int

	// retries is the controller's rate limiter, set up with it.
	retries *controller.Retries
}

// +kubebuilder:rbac:groups=example.com,resources=backupjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.com,resources=backupjobs/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=backupjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one BackupJob's runs, drills and backups to what its
// spec and schedule ask for at the clock's time, and writes what it
// observed to its status, at most once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bj := &v1alpha1.BackupJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, bj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bj.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, bj)
	}
	if err := r.syncFinalizer(ctx, bj); err != nil {
		return ctrl.Result{}, err
	}

	now := r.Clock.Now()
	obs, err := r.observe(ctx, bj, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	var out outcome
	r.recordResults(ctx, bj, obs, now, &out)
	obs.lastFailure = lastFailure(obs, bj.Status.LastFailure)
	sched := r.runSchedule(ctx, bj, obs, now, &out)
	r.runDrills(ctx, bj, obs, &out)
	ret := r.applyRetention(ctx, bj, obs, sched.loc, now, &out)
	r.pruneJobs(ctx, bj, obs, &out)
	if errors.Is(out.err, controller.ErrNotLeader) {
		return controller.StandDown(ctx, out.err)
	}

	status := computeStatus(bj, obs, sched, ret, out.problem, now)
	r.recordDegradedEvent(bj, status)
	// A failure, of the status write too, does not cancel the next
	// scheduled run (controller.Retries).
	after := r.requeueAfter(bj, sched, ret, obs, now)
	if err := r.patchStatus(ctx, bj, status); err != nil {
		return r.retries.Result(req, errors.Join(out.err, err), true, after)
	}
	return r.retries.Result(req, out.err, out.retry, after)
}

// outcome collects the errors of one reconcile and what status must say
// about them. retry is false when every error is a refusal of the spec.
type outcome struct {
	err     error
	retry   bool
	problem *cause
}

// cause is a reason and message for a condition.
type cause struct {
	reason, message string
}

func (o *outcome) add(err error, invalid bool) {
	if err == nil {
		return
	}
	o.err = errors.Join(o.err, err)
	o.retry = o.retry || !invalid
}

// report keeps the first problem of a reconcile for the Degraded condition.
func (o *outcome) report(reason, message string) {
	if o.problem == nil {
		o.problem = &cause{reason: reason, message: message}
	}
}

// requeueAfter is when to look again without a watch event: when the next
// run is due, and, jittered, when waiting on what no watch reports.
func (r *Reconciler) requeueAfter(bj *v1alpha1.BackupJob, sched scheduleResult, ret retentionResult, obs *observation, now time.Time) time.Duration {
	var after time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	if !sched.next.IsZero() {
		// A moment late rather than early: a reconcile a few milliseconds
		// before the scheduled time would find nothing due.
		soonest(sched.next.Sub(now) + 50*time.Millisecond)
	}
	for _, b := range obs.running() {
		if b.kind == v1alpha1.SnapshotBackup {
			// A snapshot not ready by its deadline fails then, whether
			// or not it changes.
			soonest(b.object.GetCreationTimestamp().Add(snapshotDeadline).Sub(now) + 50*time.Millisecond)
		}
	}
	if ret.going {
		soonest(blockedAfter)
	}
	if len(ret.blocked) > 0 || obs.source == nil {
		soonest(wait.Jitter(r.RecheckInterval, 0.2))
	}
	return after
}

// patchStatus writes status when it differs from what bj has, or from what
// this process last wrote.
func (r *Reconciler) patchStatus(ctx context.Context, bj *v1alpha1.BackupJob, status v1alpha1.BackupJobStatus) error {
	updated := bj.DeepCopy()
	updated.Status = status
	wrote, err := r.Status.Patch(ctx, bj, updated, bj.Status, status)
	if err != nil {
		return fmt.Errorf("BackupJob %s: %w", bj.Name, err)
	}
	if wrote {
		ctrl.LoggerFrom(ctx).V(1).Info("Status updated",
			"ready", meta.FindStatusCondition(status.Conditions, v1alpha1.BackupJobReadyCondition).Reason,
			"backups", status.BackupCount, "missedRuns", status.MissedRuns)
	}
	return nil
}

// recordDegradedEvent emits a Warning when the BackupJob becomes Degraded,
// or Degraded for another cause, not on every reconcile while it stays so.
func (r *Reconciler) recordDegradedEvent(bj *v1alpha1.BackupJob, status v1alpha1.BackupJobStatus) {
	now := meta.FindStatusCondition(status.Conditions, v1alpha1.BackupJobDegradedCondition)
	if now == nil || now.Status != "True" {
		return
	}
	previous := meta.FindStatusCondition(bj.Status.Conditions, v1alpha1.BackupJobDegradedCondition)
	if previous != nil && previous.Status == now.Status && previous.Reason == now.Reason && previous.Message == now.Message {
		return
	}
	r.Recorder.Eventf(bj, nil, "Warning", now.Reason, "Reconcile", "%s", now.Message)
}
