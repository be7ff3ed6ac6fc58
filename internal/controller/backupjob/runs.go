package backupjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// maxActiveRuns is how many runs concurrencyPolicy Allow lets run at once:
// status.active lists at most 16.
const maxActiveRuns = 16

// scheduleResult is what the schedule asked for in one reconcile and what
// came of it: the schedule state for status.
type scheduleResult struct {
	// problem is set when the schedule or time zone is invalid.
	problem *cause
	// loc is spec.timeZone, nil when it is not valid.
	loc                              *time.Location
	lastScheduleTime, lastMissedTime *metav1.Time
	// missedAdded is added to status.missedRuns in the same status write
	// that moves lastScheduleTime or lastMissedTime past the missed times.
	missedAdded int64
	tooMany     bool
	next        time.Time
	lastRunNow  string
}

// startOutcome is what became of a run that was due.
type startOutcome int

const (
	// runStarted: its objects exist now (or already did).
	runStarted startOutcome = iota
	// runWaiting: another run holds it back (Forbid, or Allow at its
	// limit); it stays due.
	runWaiting
	// runSkipped: it cannot start (no source, no snapshot API, a foreign
	// object in the way) and counts as missed.
	runSkipped
	// runFailed: creating its objects failed; the next attempt retries.
	runFailed
)

// runSchedule starts the run the schedule asks for at now, and the one
// spec.runNow asks for, within concurrencyPolicy.
func (r *Reconciler) runSchedule(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) scheduleResult {
	res := scheduleResult{
		lastScheduleTime: bj.Status.LastScheduleTime,
		lastMissedTime:   bj.Status.LastMissedTime,
		lastRunNow:       bj.Status.LastRunNow,
	}
	s, err := ParseSchedule(bj.Spec.Schedule, bj.Spec.TimeZone)
	if err != nil {
		res.problem = scheduleProblem(err)
		// Retention needs only the time zone, which may be valid.
		res.loc, _ = loadLocation(bj.Spec.TimeZone)
		return res
	}
	res.loc = s.Location()
	suspended := ptr.Deref(bj.Spec.Suspend, false)

	due, err := ComputeDue(s, scheduleSince(bj), now, startingDeadline(bj))
	if err != nil {
		res.problem = &cause{Reason: v1alpha1.BackupJobInvalidScheduleReason, Message: err.Error()}
		return res
	}
	res.next, res.tooMany = due.Next, due.TooMany
	// The most recent of the times missed now, for the event.
	lastMissed := due.LastMissed
	switch {
	case suspended:
		// Skipped on purpose: neither caught up after resuming nor
		// counted as missed.
		if latest := due.Latest(); !latest.IsZero() {
			res.lastMissedTime = ptr.To(metav1.NewTime(latest))
		}
	case !due.Run.IsZero():
		switch r.startRun(ctx, bj, obs, newRun(bj.Name, due.Run, ""), now, out) {
		case runStarted:
			res.lastScheduleTime = ptr.To(metav1.NewTime(due.Run))
			res.missedAdded = due.Missed
		case runSkipped:
			res.lastMissedTime = ptr.To(metav1.NewTime(due.Run))
			res.missedAdded = due.Missed + 1
			lastMissed = due.Run
		}
	case !due.LastMissed.IsZero():
		res.lastMissedTime = ptr.To(metav1.NewTime(due.LastMissed))
		res.missedAdded = due.Missed
	}
	if res.missedAdded > 0 {
		r.Recorder.Eventf(bj, nil, corev1.EventTypeWarning, "MissedRuns", "Schedule",
			"%d scheduled run(s) missed, the latest due at %s (operator down, a run holding them back, or past startingDeadlineSeconds)",
			res.missedAdded, stamp(lastMissed))
	}

	if bj.Spec.RunNow != "" && bj.Spec.RunNow != bj.Status.LastRunNow {
		res.lastRunNow = r.runNow(ctx, bj, obs, now, out)
	}
	return res
}

// runNow starts the run that a new spec.runNow value asks for, and returns
// the value status.lastRunNow should hold: the new one once its run exists.
func (r *Reconciler) runNow(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) string {
	for _, b := range obs.backups {
		if b.runNow == bj.Spec.RunNow {
			return bj.Spec.RunNow // started by an earlier attempt
		}
	}
	for _, f := range obs.postgres.fences {
		if f.run.runNow == bj.Spec.RunNow {
			return bj.Spec.RunNow // a run of a PostgresCluster, fenced by an earlier attempt
		}
	}
	at := now.Truncate(time.Second)
	for obs.backupNamed(RunName(bj.Name, at)) != nil {
		// A scheduled run of this very second exists: the request is
		// another run, one second later by name.
		at = at.Add(time.Second)
	}
	switch r.startRun(ctx, bj, obs, newRun(bj.Name, at, bj.Spec.RunNow), now, out) {
	case runStarted, runSkipped:
		return bj.Spec.RunNow
	}
	return bj.Status.LastRunNow
}

func scheduleProblem(err error) *cause {
	reason := v1alpha1.BackupJobInvalidScheduleReason
	var fe *field.Error
	if errors.As(err, &fe) && fe.Field == timeZonePath.String() {
		reason = v1alpha1.BackupJobUnknownTimeZoneReason
	}
	return &cause{Reason: reason, Message: err.Error()}
}

// scheduleSince is the time the schedule's state in status starts from: the
// later of lastScheduleTime and lastMissedTime, or the BackupJob's creation.
func scheduleSince(bj *v1alpha1.BackupJob) time.Time {
	since := bj.CreationTimestamp.Time
	for _, t := range []*metav1.Time{bj.Status.LastScheduleTime, bj.Status.LastMissedTime} {
		if t != nil && t.After(since) {
			since = t.Time
		}
	}
	return since
}

func startingDeadline(bj *v1alpha1.BackupJob) *time.Duration {
	if bj.Spec.StartingDeadlineSeconds == nil {
		return nil
	}
	return ptr.To(time.Duration(*bj.Spec.StartingDeadlineSeconds) * time.Second)
}

// activeRuns are the names of the runs in progress: backups without a
// result, unfinished run Jobs (a pending Job counts as running), and runs
// that hold a fence on a PostgresCluster.
func (o *observation) activeRuns() []string {
	var names []string
	seen := map[string]bool{}
	for _, b := range o.running() {
		names = append(names, b.name)
		seen[b.name] = true
	}
	for _, f := range o.postgres.fences {
		if !seen[f.run.name] {
			names = append(names, f.run.name)
			seen[f.run.name] = true
		}
	}
	for name, j := range o.runJobs {
		if finished, _, _, _ := jobOutcome(j); !finished && !seen[name] && j.DeletionTimestamp == nil {
			names = append(names, name)
		}
	}
	return names
}

// startRun creates the objects of run: the backup claim and its Job, or the
// snapshot. A run whose objects exist already (a retry after a failed
// status write, or a second leader) counts as started: names are derived
// from the scheduled time, so it cannot start twice.
func (r *Reconciler) startRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, run run, now time.Time, out *outcome) startOutcome {
	if obs.backupNamed(run.name) != nil || obs.runJobs[run.name] != nil || obs.fenceOfRun(run.name) != nil {
		return runStarted
	}
	snapshot := snapshotTarget(bj) != nil
	if snapshot && !obs.snapshotsServed {
		out.Report(v1alpha1.BackupJobSnapshotAPIMissingReason,
			"spec.target.snapshot needs the VolumeSnapshot API (snapshot.storage.k8s.io/v1), which this cluster does not serve: install the external-snapshotter CRDs and controller, then restart the operator")
		return runSkipped
	}
	if problem := obs.sourceProblem(bj, r.PostgresClustersServed); problem != nil {
		out.Report(problem.Reason, problem.Message)
		return runSkipped
	}

	if active := obs.activeRuns(); len(active) > 0 {
		switch policy(bj) {
		case v1alpha1.ForbidConcurrent:
			return runWaiting
		case v1alpha1.ReplaceConcurrent:
			if !snapshot {
				if err := r.replace(ctx, bj, obs, active, run, now); err != nil {
					out.Add(err, false)
					return runFailed
				}
				break
			}
			// A snapshot cannot be stopped halfway: Replace lets the new
			// one start alongside, as Allow does.
			fallthrough
		default:
			if len(active) >= maxActiveRuns {
				return runWaiting
			}
		}
	}

	if m := r.methodOf(bj); m != nil {
		return m.start(ctx, bj, obs, run, now, out)
	}
	if snapshot {
		snap := &snapshotv1.VolumeSnapshot{}
		res := r.Children.Ensure(ctx, bj, children.Typed(desiredSnapshot(bj, run)), snap,
			children.OwnedBy(isRunOf(bj, run.name)), children.WithoutCreateEvent())
		if o := r.judgeCreate(res, out); o != runStarted {
			return o
		}
		obs.backups = append(obs.backups, snapshotBackup(snap, now))
		sortBackups(obs.backups)
		r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
			"Run %s started (scheduled for %s): VolumeSnapshot %s of claim %s", run.name, stamp(run.scheduled), run.name, bj.Spec.Source.PersistentVolumeClaimName)
		return runStarted
	}

	if r.refuseTemplate(bj, jobTemplatePath, bj.Spec.JobTemplate, desiredRunJob(bj, run), out) {
		return runFailed
	}
	if o := r.startClaimRun(ctx, bj, obs, run, desiredBackupClaim(bj, run, obs.source), out); o != runStarted {
		return o
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
		"Run %s started (scheduled for %s): Job %s copies claim %s into the new claim %s", run.name, stamp(run.scheduled), run.name, bj.Spec.Source.PersistentVolumeClaimName, run.name)
	return runStarted
}

// startClaimRun creates the backup claim of a run with a volume target,
// then its Job.
func (r *Reconciler) startClaimRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, run run, desired *corev1.PersistentVolumeClaim, out *outcome) startOutcome {
	claim := &corev1.PersistentVolumeClaim{}
	res := r.Children.Ensure(ctx, bj, children.Typed(desired), claim, children.OwnedBy(isRunOf(bj, run.name)), children.WithoutCreateEvent())
	if o := r.judgeCreate(res, out); o != runStarted {
		return o
	}
	obs.backups = append(obs.backups, claimBackup(claim))
	sortBackups(obs.backups)
	return r.ensureRunJob(ctx, bj, obs, run, out)
}

// ensureRunJob creates the Job of a run whose backup claim exists. The
// reconcile's status write lists it in status.active, the record that it
// was made (see jobGone).
func (r *Reconciler) ensureRunJob(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, run run, out *outcome) startOutcome {
	desired, o := r.desiredJobOfRun(ctx, bj, obs, run, out)
	if o != runStarted {
		return o
	}
	job := &batchv1.Job{}
	res := r.Children.Ensure(ctx, bj, children.Typed(desired), job, children.WithoutCreateEvent())
	if o := r.judgeCreate(res, out); o != runStarted {
		return o
	}
	obs.runJobs[run.name] = job
	return runStarted
}

// desiredJobOfRun is the Job of a run with a volume or objectStore
// target: for a PostgresCluster source, a base backup of the instance its
// claim or record names, into the claim or the cluster's object store;
// else the user's template, on the node where its source is mounted.
func (r *Reconciler) desiredJobOfRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, run run, out *outcome) (*batchv1.Job, startOutcome) {
	if m := r.methodOf(bj); m != nil {
		return m.runJob(bj, obs, run, out)
	}
	desired := desiredRunJob(bj, run)
	if r.refuseTemplate(bj, jobTemplatePath, bj.Spec.JobTemplate, desired, out) {
		return nil, runFailed
	}
	node, err := r.nodeOfSource(ctx, obs.source)
	if err != nil {
		out.Add(err, false)
		return nil, runFailed
	}
	if node != "" {
		pinToNode(&desired.Spec.Template.Spec, node)
	}
	return desired, runStarted
}

// judgeCreate turns the result of creating a run's object into the run's
// outcome, and its problem into the status.
func (r *Reconciler) judgeCreate(res children.Result, out *outcome) startOutcome {
	switch res.Action {
	case children.Conflict:
		out.Report(v1alpha1.BackupJobRunConflictReason, res.Message)
		return runSkipped
	case children.Invalid:
		out.Add(res.Err, true)
		out.Report(v1alpha1.BackupJobInvalidSpecReason, res.Message)
		return runFailed
	case children.Failed:
		out.Add(res.Err, false)
		return runFailed
	}
	return runStarted
}

// isRunOf tells whether a backup found under a run's name is that run's
// of bj. Backups carry no owner reference, so their labels say whose they
// are, and MadeByAnnotation which BackupJob of the name made them: one left
// by an earlier BackupJob of the same name is in the way, not this run's.
func isRunOf(bj *v1alpha1.BackupJob, runName string) func(client.Object) bool {
	return func(obj client.Object) bool {
		l := obj.GetLabels()
		return l[v1alpha1.BackupJobLabel] == bj.Name && l[RunLabel] == runName && children.ManagedSelector().Matches(labels.Set(l)) &&
			madeBy(bj, obj)
	}
}

// replace stops the runs in progress so that next can start: each one's
// backup is marked Failed (reason Replaced) first, so that the result
// survives, then its Job is deleted with its pods. The backups themselves
// stay, for keepFailed to decide.
func (r *Reconciler) replace(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, active []string, next run, now time.Time) error {
	var errs []error
	for _, name := range active {
		message := fmt.Sprintf("Stopped at %s: the run %s was due and concurrencyPolicy is Replace", stamp(now), next.name)
		if b := obs.backupNamed(name); b != nil && b.result == v1alpha1.BackupRunning {
			if err := r.recordResult(ctx, b, v1alpha1.BackupFailed, v1alpha1.BackupJobReplacedReason, message, now); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if j := obs.runJobs[name]; j != nil {
			if err := r.deleteJob(ctx, j); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(obs.runJobs, name)
		}
		r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunReplaced", "Run", "Run %s stopped: %s", name, message)
	}
	return errors.Join(errs...)
}

func policy(bj *v1alpha1.BackupJob) v1alpha1.ConcurrencyPolicy {
	if bj.Spec.ConcurrencyPolicy == "" {
		return v1alpha1.ForbidConcurrent
	}
	return bj.Spec.ConcurrencyPolicy
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
