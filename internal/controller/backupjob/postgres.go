package backupjob

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/pgbackup"
)

// A run of a PostgresCluster source (spec.source.postgresCluster) with a
// snapshot target is a cold snapshot of a fenced instance, driven level by
// level from what the PostgresCluster shows:
//
//  1. due: the most caught-up ready replica is chosen (pgbackup.ChooseFence)
//     and fenced by the annotations example.com/backup-fence (the
//     instance) and -fence-by (the run), written with the cluster's
//     resourceVersion so that two writers cannot both take the fence;
//  2. its instance manager stops PostgreSQL cleanly and reports it:
//     status.instances[] says fenced, backupFence = the run, cleanShutdown;
//  3. the run's VolumeSnapshot of the instance's claim is created;
//  4. once the snapshot has a result, as any snapshot run's, the fence is
//     removed, and the replica catches up.
//
// The fence is the run's only record until its snapshot exists: every
// reconcile looks at the fences that name a run of the BackupJob and
// removes those whose run is no longer in progress, so none outlives its
// run, across restarts too.

// PostgresClusterAPI is the PostgresCluster API, optional for this
// controller: without it (the postgrescluster component not installed) a
// postgresCluster source reports SourceNotFound.
var PostgresClusterAPI = v1alpha1.GroupVersion.WithResource("postgresclusters")

// fenceTimeout bounds how long a run waits, from its fence, for the fenced
// instance to report the clean shutdown of its PostgreSQL: a replica stops
// in seconds, and while fenced it is not a failover candidate, so a fence
// that does not act is removed and the run fails rather than waits.
const fenceTimeout = 5 * time.Minute

// fence is a fence of a PostgresCluster's instance held by a run of the
// BackupJob.
type fence struct {
	// cluster is the PostgresCluster as last read or written.
	cluster  *v1alpha1.PostgresCluster
	instance string
	run      run
	// since is when the fence was set, zero when the annotation is
	// missing or unreadable (the fence then counts as timed out).
	since time.Time
}

// fenceOf returns the fence that a run of the BackupJob backupJob holds on
// pg, or nil.
func fenceOf(backupJob string, pg *v1alpha1.PostgresCluster) *fence {
	a := pg.GetAnnotations()
	by, instance := a[v1alpha1.PostgresBackupFenceByAnnotation], a[v1alpha1.PostgresBackupFenceAnnotation]
	scheduled, ok := runTime(backupJob, by)
	if !ok || instance == "" {
		return nil
	}
	f := &fence{cluster: pg, instance: instance, run: run{name: by, scheduled: scheduled, runNow: a[v1alpha1.PostgresBackupFenceRunNowAnnotation]}}
	if t, err := time.Parse(time.RFC3339, a[v1alpha1.PostgresBackupFenceSinceAnnotation]); err == nil {
		f.since = t
	}
	return f
}

// runTime is the scheduled time of the run name of BackupJob backupJob;
// false when name is not the name of one of its runs.
func runTime(backupJob, name string) (time.Time, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	t := time.Unix(secs, 0).UTC()
	return t, RunName(backupJob, t) == name
}

// fenceOfRun returns the fence that run name holds, or nil.
func (o *observation) fenceOfRun(name string) *fence {
	for _, f := range o.postgres.fences {
		if f.run.name == name {
			return f
		}
	}
	return nil
}

// observePostgres reads the PostgresClusters of the BackupJob's namespace
// from the cache: the one spec.source names, and every fence a run of the
// BackupJob holds, whichever cluster it is on (spec.source may have
// changed since).
func (r *Reconciler) observePostgres(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation) error {
	if !r.PostgresClustersServed {
		return nil
	}
	list := &v1alpha1.PostgresClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(bj.Namespace)); err != nil {
		return fmt.Errorf("list the PostgresClusters of namespace %s: %w", bj.Namespace, err)
	}
	for i := range list.Items {
		pg := &list.Items[i]
		if pg.Name == bj.Spec.Source.PostgresCluster {
			obs.postgres.cluster = pg
		}
		if f := fenceOf(bj.Name, pg); f != nil {
			obs.postgres.fences = append(obs.postgres.fences, f)
		}
		if backup := pg.Labels[DrillLabel]; backup != "" && pg.Labels[v1alpha1.BackupJobLabel] == bj.Name && isControlledBy(pg, bj) && obs.postgres.drillClusters != nil {
			obs.postgres.drillClusters[backup] = pg
		}
	}
	return nil
}

// fenceStep is what a run that holds a fence does next.
type fenceStep int

const (
	// fenceWait: the fenced instance has not reported a clean shutdown
	// for the run yet, or its snapshot is not ready yet.
	fenceWait fenceStep = iota
	// fenceSnapshot: the instance stopped cleanly for the run: cut the
	// snapshot.
	fenceSnapshot
	// fenceRelease: the run is over (its snapshot has a result, was
	// deleted, or the BackupJob no longer backs up this cluster):
	// remove the fence.
	fenceRelease
	// fenceTimedOut: no clean shutdown by fenceTimeout: remove the fence,
	// the run fails.
	fenceTimedOut
)

// nextFenceStep decides, from what the reconcile observed, what the run
// holding f does: b is its backup, nil when there is none yet.
func nextFenceStep(bj *v1alpha1.BackupJob, f *fence, b *backup, now time.Time) fenceStep {
	switch {
	case b != nil && (b.result != v1alpha1.BackupRunning || b.deleting()):
		return fenceRelease
	case b != nil:
		return fenceWait
	case bj.Spec.Source.PostgresCluster != f.cluster.Name || snapshotTarget(bj) == nil:
		return fenceRelease
	}
	if i := instanceOf(f.cluster, f.instance); i != nil && i.Fenced && i.CleanShutdown && i.BackupFence == f.run.name {
		return fenceSnapshot
	}
	if f.since.IsZero() || !now.Before(f.since.Add(fenceTimeout)) {
		return fenceTimedOut
	}
	return fenceWait
}

func instanceOf(pg *v1alpha1.PostgresCluster, name string) *v1alpha1.PostgresInstanceStatus {
	for i := range pg.Status.Instances {
		if pg.Status.Instances[i].Name == name {
			return &pg.Status.Instances[i]
		}
	}
	return nil
}

// advanceFences moves each run that holds a fence one step on: it cuts the
// snapshot once the instance stopped cleanly, and removes the fence once
// the run is over or timed out.
func (r *Reconciler) advanceFences(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) {
	for _, f := range slices.Clone(obs.postgres.fences) {
		b := obs.backupNamed(f.run.name)
		switch nextFenceStep(bj, f, b, now) {
		case fenceSnapshot:
			r.cutSnapshot(ctx, bj, obs, f, now, out)
		case fenceRelease:
			if err := r.removeFence(ctx, obs, f); err != nil {
				out.Add(err, false)
				continue
			}
			r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "FenceRemoved", "Unfence",
				"Run %s unfenced instance %s of PostgresCluster %s", f.run.name, f.instance, f.cluster.Name)
		case fenceTimedOut:
			r.timeOutFence(ctx, bj, obs, f, out)
		}
	}
}

// fenceRecordRetry is how soon a reconcile that recorded a timed-out run's
// failure comes back to remove its fence.
const fenceRecordRetry = time.Second

// timeOutFence ends the run holding f, which timed out: its failure is
// recorded in status.lastFailure first, and the fence removed only by a
// later reconcile that reads it there. The fence is the run's only trace:
// removed before the status that tells of the failure is written (a write
// refused, a restart, a lost lease), the failed run would leave none, and
// LastRunSucceeded keep saying the run before succeeded.
func (r *Reconciler) timeOutFence(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, f *fence, out *outcome) {
	name := f.cluster.Name
	message := fmt.Sprintf("Run %s: instance %s of PostgresCluster %s did not report a clean shutdown of PostgreSQL within %s of its fence; no snapshot was taken and the fence is removed",
		f.run.name, f.instance, name, fenceTimeout)
	if !failureRecorded(bj.Status.LastFailure, f.run) {
		failure := &v1alpha1.BackupRunFailure{Run: f.run.name, ScheduledTime: metav1.NewTime(f.run.scheduled),
			Reason: v1alpha1.BackupJobFenceTimeoutReason, Message: kit.TruncateMessage(message)}
		if obs.lastFailure == nil || !f.run.scheduled.Before(obs.lastFailure.ScheduledTime.Time) {
			obs.lastFailure = failure
		}
		obs.postgres.unfenceAfterRecord = true
		return
	}
	if err := r.removeFence(ctx, obs, f); err != nil {
		out.Add(err, false)
		return
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeWarning, "RunFailed", "Run", "%s", message)
}

// failureRecorded tells whether recorded, a status.lastFailure, tells of
// the failure of rn, or of a later run's, which supersedes it.
func failureRecorded(recorded *v1alpha1.BackupRunFailure, rn run) bool {
	return recorded != nil && (recorded.Run == rn.name || recorded.ScheduledTime.After(rn.scheduled))
}

// cutSnapshot creates the VolumeSnapshot of the claim of the instance f
// fences, recording where its data stands.
func (r *Reconciler) cutSnapshot(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, f *fence, now time.Time, out *outcome) {
	snap := &snapshotv1.VolumeSnapshot{}
	desired := desiredPostgresSnapshot(bj, f.run, f.cluster.Name, instanceOf(f.cluster, f.instance))
	res := r.Children.Ensure(ctx, bj, children.Typed(desired), snap, children.OwnedBy(isRunOf(bj, f.run.name)), children.WithoutCreateEvent())
	if r.judgeCreate(res, out) != runStarted {
		return
	}
	obs.backups = append(obs.backups, snapshotBackup(snap, now))
	sortBackups(obs.backups)
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "SnapshotCut", "Snapshot",
		"Run %s: VolumeSnapshot %s of claim %s, whose PostgreSQL stopped cleanly at checkpoint %s", f.run.name, f.run.name, f.instance,
		desired.Annotations[v1alpha1.BackupCheckpointLSNAnnotation])
}

// desiredPostgresSnapshot is the VolumeSnapshot of a run of a
// PostgresCluster: of the claim of the fenced instance (named as it is),
// annotated with the cluster, the instance, and the timeline and
// checkpoint of its clean shutdown.
func desiredPostgresSnapshot(bj *v1alpha1.BackupJob, r run, cluster string, instance *v1alpha1.PostgresInstanceStatus) *snapshotv1.VolumeSnapshot {
	s := desiredSnapshotOf(bj, r, instance.Name)
	s.Annotations[v1alpha1.BackupSourceClusterAnnotation] = cluster
	s.Annotations[v1alpha1.BackupSourceInstanceAnnotation] = instance.Name
	s.Annotations[v1alpha1.BackupTimelineAnnotation] = strconv.FormatInt(instance.Timeline, 10)
	s.Annotations[v1alpha1.BackupCheckpointLSNAnnotation] = instance.CheckpointLSN
	return s
}

// setFence fences instance of the cluster for run, with the cluster's
// resourceVersion: a write since the cache read, another run's fence
// among them, makes it fail and the next reconcile look again.
func (r *Reconciler) setFence(ctx context.Context, obs *observation, instance string, rn run, now time.Time) error {
	pg := obs.postgres.cluster
	updated := pg.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[v1alpha1.PostgresBackupFenceAnnotation] = instance
	updated.Annotations[v1alpha1.PostgresBackupFenceByAnnotation] = rn.name
	updated.Annotations[v1alpha1.PostgresBackupFenceSinceAnnotation] = stamp(now)
	if rn.runNow != "" {
		updated.Annotations[v1alpha1.PostgresBackupFenceRunNowAnnotation] = rn.runNow
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(pg, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("fence instance %s of PostgresCluster %s for run %s: %w", instance, pg.Name, rn.name, err)
	}
	*pg = *updated
	obs.postgres.fences = append(obs.postgres.fences, &fence{cluster: pg, instance: instance, run: rn, since: now.Truncate(time.Second)})
	return nil
}

// removeFence removes the fence f, with the cluster's resourceVersion, so
// that only the fence that was read is removed.
func (r *Reconciler) removeFence(ctx context.Context, obs *observation, f *fence) error {
	pg := f.cluster
	updated := pg.DeepCopy()
	for _, a := range []string{v1alpha1.PostgresBackupFenceAnnotation, v1alpha1.PostgresBackupFenceByAnnotation,
		v1alpha1.PostgresBackupFenceSinceAnnotation, v1alpha1.PostgresBackupFenceRunNowAnnotation} {
		delete(updated.Annotations, a)
	}
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(pg, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("unfence instance %s of PostgresCluster %s after run %s: %w", f.instance, pg.Name, f.run.name, err)
	}
	*pg = *updated
	obs.postgres.fences = slices.DeleteFunc(obs.postgres.fences, func(x *fence) bool { return x == f })
	return nil
}

// startPostgresRun starts a run of a PostgresCluster source by fencing the
// instance pgbackup.ChooseFence picks; the snapshot follows in a later
// reconcile (advanceFences), once the instance stopped cleanly.
func (r *Reconciler) startPostgresRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, now time.Time, out *outcome) startOutcome {
	instance, wait := pgbackup.ChooseFence(obs.postgres.cluster, bj.Spec.Source.AllowPrimaryFencing)
	if wait != nil {
		obs.postgres.waiting = wait
		return runWaiting
	}
	if err := r.setFence(ctx, obs, instance, rn, now); err != nil {
		out.Add(err, false)
		return runFailed
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
		"Run %s started (scheduled for %s): instance %s of PostgresCluster %s is fenced; its claim is snapshot once PostgreSQL stopped cleanly",
		rn.name, stamp(rn.scheduled), instance, obs.postgres.cluster.Name)
	return runStarted
}

// fenceMessages say where each run that holds a fence stands, for the
// Ready condition.
func fenceMessages(obs *observation) []string {
	var out []string
	for _, f := range obs.postgres.fences {
		if obs.backupNamed(f.run.name) == nil {
			out = append(out, fmt.Sprintf("run %s waits for instance %s of PostgresCluster %s to stop cleanly", f.run.name, f.instance, f.cluster.Name))
		}
	}
	return out
}

// fenceDeadline is when the soonest fence still waiting for a clean
// shutdown times out, zero for none.
func fenceDeadline(obs *observation) time.Time {
	var soonest time.Time
	for _, f := range obs.postgres.fences {
		if obs.backupNamed(f.run.name) != nil || f.since.IsZero() {
			continue
		}
		if d := f.since.Add(fenceTimeout); soonest.IsZero() || d.Before(soonest) {
			soonest = d
		}
	}
	return soonest
}

// releaseAllFences removes every fence a run of bj holds: the BackupJob is
// being deleted, and no run of it goes on.
func (r *Reconciler) releaseAllFences(ctx context.Context, bj *v1alpha1.BackupJob) error {
	obs := &observation{}
	if err := r.observePostgres(ctx, bj, obs); err != nil {
		return err
	}
	for _, f := range slices.Clone(obs.postgres.fences) {
		if err := r.removeFence(ctx, obs, f); err != nil {
			return err
		}
		r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "FenceRemoved", "Unfence",
			"BackupJob %s is deleted: run %s unfenced instance %s of PostgresCluster %s", bj.Name, f.run.name, f.instance, f.cluster.Name)
	}
	return nil
}
