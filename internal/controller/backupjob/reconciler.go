package backupjob

import (
	"cmp"
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
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
// its retention policy no longer keeps, and reports all of it in status. It
// is the BackupJob's part of the reconcile skeleton of package kit.
type Reconciler struct {
	kit.Base
	// SnapshotsServed tells whether the cluster serves VolumeSnapshots.
	SnapshotsServed bool
	// PostgresClustersServed tells whether the cluster serves
	// PostgresClusters, which a postgresCluster source needs.
	PostgresClustersServed bool
	// PodSecurityVersion is the version of the Pod Security Standards the
	// runs' and drills' pods are judged by: the API server's.
	PodSecurityVersion podsecurity.Version
	// RecheckInterval is how often a BackupJob waiting on something no
	// watch reports looks again (default 30 s, with 20% jitter).
	RecheckInterval time.Duration
	// DeletionGracePeriod bounds how long a BackupJob being deleted with
	// deletionPolicy Delete waits for its backups to go (default 1 min).
	DeletionGracePeriod time.Duration

	// baseBackup is what base backup Jobs need: the operator's image and
	// the cluster's DNS domain.
	baseBackup baseBackupOptions

	// namespacePods is where copy Jobs' sources are mounted, shared by the
	// runs that start together.
	namespacePods namespacePods

	loop *kit.Loop[v1alpha1.BackupJob, *v1alpha1.BackupJob, v1alpha1.BackupJobStatus, *v1alpha1.BackupJobStatus]
}

// NewReconciler returns the BackupJob reconciler of mgr, reading and writing
// with c: the manager's client, or another one in tests.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *Reconciler {
	r := &Reconciler{
		Base:                   kit.NewBase(mgr, c, "BackupJob", opts.Clock),
		SnapshotsServed:        opts.ServedOptionalAPIs[SnapshotAPI],
		PostgresClustersServed: opts.ServedOptionalAPIs[PostgresClusterAPI],
		PodSecurityVersion:     opts.PodSecurityVersion,
		RecheckInterval:        defaultRecheckInterval,
		DeletionGracePeriod:    defaultDeletionGracePeriod,
		baseBackup:             baseBackupOptions{operatorImage: cmp.Or(opts.OperatorImage, platform.DefaultImage()), clusterDomain: opts.ClusterDomain},
	}
	r.loop = r.newLoop()
	return r
}

// newLoop returns the reconcile loop of r.
func (r *Reconciler) newLoop() *kit.Loop[v1alpha1.BackupJob, *v1alpha1.BackupJob, v1alpha1.BackupJobStatus, *v1alpha1.BackupJobStatus] {
	return kit.NewLoop(&r.Base, r, func(bj *v1alpha1.BackupJob) *v1alpha1.BackupJobStatus { return &bj.Status }, kit.LoopOptions[v1alpha1.BackupJobStatus]{
		Name:              "backupjob",
		Kind:              v1alpha1.GroupVersion.WithKind("BackupJob").GroupKind(),
		Namespaced:        true,
		ReadyCondition:    v1alpha1.BackupJobReadyCondition,
		DegradedCondition: v1alpha1.BackupJobDegradedCondition,
		Conditions: []string{v1alpha1.BackupJobReadyCondition, v1alpha1.BackupJobLastRunSucceededCondition,
			v1alpha1.BackupJobVerifiedCondition, v1alpha1.BackupJobRetentionAppliedCondition, v1alpha1.BackupJobDegradedCondition},
		TimedWork: true,
	})
}

// +kubebuilder:rbac:groups=example.com,resources=backupjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.com,resources=backupjobs/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=backupjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=example.com,resources=postgresclusters,verbs=get;list;watch;patch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list

// Reconcile brings one BackupJob's runs, drills and backups to what its
// spec and schedule ask for at the clock's time, and writes what it
// observed to its status, at most once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.loop.Reconcile(ctx, req)
}

// Sync starts the runs and drills that are due, records how runs ended,
// applies retention and computes the status from what it observed.
func (r *Reconciler) Sync(ctx context.Context, bj *v1alpha1.BackupJob) kit.Outcome[v1alpha1.BackupJobStatus] {
	now := r.Clock.Now()
	obs, err := r.observe(ctx, bj, now)
	if err != nil {
		return kit.Outcome[v1alpha1.BackupJobStatus]{Err: err}
	}
	var out outcome
	r.recordResults(ctx, bj, obs, now, &out)
	obs.lastFailure = lastFailure(obs, bj.Status.LastFailure)
	for _, m := range r.methods() {
		m.advance(ctx, bj, obs, now, &out)
	}
	sched := r.runSchedule(ctx, bj, obs, now, &out)
	r.runDrills(ctx, bj, obs, now, &out)
	ret := r.applyRetention(ctx, bj, obs, sched.loc, now, &out)
	r.pruneJobs(ctx, bj, obs, &out)
	if errors.Is(out.Err, platform.ErrNotLeader) {
		return kit.Outcome[v1alpha1.BackupJobStatus]{Err: out.Err}
	}
	status := computeStatus(bj, obs, sched, ret, out.Problem, now)
	after, due := r.requeueAfter(bj, sched, ret, obs, now)
	return kit.Outcome[v1alpha1.BackupJobStatus]{Status: &status, Err: out.Err, SpecRefused: !out.Retry, After: after, Due: due}
}

// outcome collects the errors of one reconcile and what status must say
// about them: the first problem reported.
type outcome struct {
	kit.Problems
}

// cause is a reason and message for a condition.
type cause = kit.Cause

// requeueAfter is when to look again without a watch event: when the next
// run is due (due: the soonest is that), and, jittered, when waiting on
// what no watch reports.
func (r *Reconciler) requeueAfter(bj *v1alpha1.BackupJob, sched scheduleResult, ret retentionResult, obs *observation, now time.Time) (after time.Duration, due bool) {
	soonest := func(d time.Duration) {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	var nextRun time.Duration
	if !sched.next.IsZero() {
		// A moment late rather than early: a reconcile a few milliseconds
		// before the scheduled time would find nothing due.
		nextRun = sched.next.Sub(now) + 50*time.Millisecond
		soonest(nextRun)
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
	if obs.postgres.unfenceAfterRecord {
		// The failure of a run that timed out is recorded by this
		// reconcile's status; its fence goes in the next.
		soonest(fenceRecordRetry)
	}
	if d := fenceDeadline(obs); !d.IsZero() {
		// A fence not acted on by its deadline is removed then.
		soonest(d.Sub(now) + 50*time.Millisecond)
	}
	if d := drillDeadline(obs); !d.IsZero() {
		// A drill's cluster not Healthy by its deadline fails the drill
		// then, whether or not it changes.
		soonest(d.Sub(now) + 50*time.Millisecond)
	}
	if len(ret.blocked) > 0 || obs.sourceProblem(bj, r.PostgresClustersServed) != nil || obs.postgres.waiting != nil {
		soonest(wait.Jitter(r.RecheckInterval, 0.2))
	}
	return after, after > 0 && after == nextRun
}
