package backupjob

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// retentionResult is what applying the retention policy decided and did.
type retentionResult struct {
	// verdicts by backup name; empty when retention was not applied.
	verdicts map[string]Verdict
	// skipped says why retention was not applied at all.
	skipped *cause
	// blocked names backups that were deleted but stay (someone else's
	// finalizer), with what holds them.
	blocked []string
	// failed holds the errors of deletions the API server refused.
	failed []string
	// going is true when a backup is being deleted since less than
	// blockedAfter: look again then.
	going bool
	// inherited names the backups an earlier BackupJob of the name made,
	// which retention leaves alone.
	inherited []string
	// storeKept names the object-store backups the policy no longer
	// keeps, which the BackupJob's retention does not delete (see
	// storebackup.go).
	storeKept []string
}

// blockedAfter is how long a backup may take to go after its deletion
// before it counts as blocked.
const blockedAfter = 10 * time.Second

// applyRetention deletes exactly the backups that Retain drops. Backups
// being deleted already are left out of the decision (they are going), and
// are reported as blocked for as long as they stay. A backup that a restore
// drill is reading is deleted after the drill.
func (r *Reconciler) applyRetention(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, loc *time.Location, now time.Time, out *outcome) retentionResult {
	res := retentionResult{verdicts: map[string]Verdict{}, inherited: obs.inherited}
	for _, b := range obs.backups {
		if !b.deleting() {
			continue
		}
		// kube-controller-manager removes its protection finalizers a
		// moment after the last pod using a claim ended: only a backup
		// still there after blockedAfter is held by something.
		if since := now.Sub(b.object.GetDeletionTimestamp().Time); since >= blockedAfter {
			res.blocked = append(res.blocked, describeBlocked(b.object))
		} else {
			res.going = true
		}
	}
	if loc == nil {
		// Without the time zone the daily, weekly and monthly buckets
		// cannot be told: delete nothing rather than the wrong backups.
		res.skipped = &cause{Reason: v1alpha1.BackupJobUnknownTimeZoneReason, Message: "Retention is not applied while spec.timeZone is not valid"}
		return res
	}
	deletedNames := map[string]bool{}
	var candidates []Candidate
	for _, b := range obs.backups {
		if !b.deleting() {
			candidates = append(candidates, Candidate{Name: b.name, ScheduledTime: b.scheduled, Result: b.result, Pinned: b.pinned,
				Verified: b.verified == v1alpha1.VerificationPassed})
		}
	}
	for _, v := range Retain(candidates, PolicyFrom(bj.Spec.Retention), loc) {
		res.verdicts[v.Name] = v
		b := obs.backupNamed(v.Name)
		// A backup whose run still holds a fence is deleted once the fence
		// is gone: else the run would cut its snapshot again. One that a
		// restore drill reads is deleted once the drill is over.
		if !v.Delete || b == nil || b.pinned || obs.drilling(b.name) || obs.fenceOfRun(b.name) != nil {
			continue
		}
		if b.kind == v1alpha1.ObjectStoreBackup && !goneFromStore(b, obs.postgres.cluster) {
			// Deleting its record would delete nothing in the store, and
			// say that it did: the backup stays, listed; the cluster's
			// spec.backup.retention deletes it with the WAL only it needs,
			// and its record goes once the cluster's status shows it gone.
			res.storeKept = append(res.storeKept, b.name)
			continue
		}
		deleted, err := r.deleteBackup(ctx, bj, b)
		if err != nil {
			res.failed = append(res.failed, err.Error())
			out.Add(err, false)
		}
		if deleted {
			deletedNames[b.name] = true
		}
	}
	// What was deleted is gone from status at once; a backup someone
	// else's finalizer holds shows up as blocked from the next reconcile.
	obs.backups = slices.DeleteFunc(obs.backups, func(b *backup) bool { return deletedNames[b.name] })
	return res
}

// goneFromStore tells whether the object-store backup b is no longer in
// the store, as the cluster's status says: its oldest base backup
// (status.archiving.firstRecoverabilityPoint, which the primary reads from
// the store) ended after b did, so the cluster's retention deleted b.
func goneFromStore(b *backup, pg *v1alpha1.PostgresCluster) bool {
	if pg == nil || pg.Status.Archiving == nil || pg.Status.Archiving.FirstRecoverabilityPoint == nil || b.finished.IsZero() {
		return false
	}
	return b.finished.Before(pg.Status.Archiving.FirstRecoverabilityPoint.Time)
}

// drilling tells whether a restore drill of backup name still has
// anything that may read it: the claim restored from it or its verify Job,
// or, for a PostgresCluster's backup, the temporary cluster restored from
// it (which restores the backup while it starts), even being deleted.
func (o *observation) drilling(name string) bool {
	return o.drillClaims[name] != nil || o.drillJobs[name] != nil || o.postgres.drillClusters[name] != nil
}

// deleteBackup deletes one backup the retention policy dropped. The
// preconditions make sure it is the object retention judged: not one
// recreated under the name (UID), and not one changed since, say pinned a
// moment ago (resourceVersion): a conflict waits for the next reconcile.
func (r *Reconciler) deleteBackup(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) (bool, error) {
	if b.object.GetLabels()[v1alpha1.PinnedLabel] == "true" {
		return false, nil
	}
	uid, version := b.object.GetUID(), b.object.GetResourceVersion()
	err := r.Client.Delete(ctx, b.object, client.Preconditions{UID: &uid, ResourceVersion: &version})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Backup changed since it was read; retention looks again", "backup", b.name)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete backup %s, which the retention policy no longer keeps: %w", b.name, err)
	}
	kind := "PersistentVolumeClaim"
	if b.kind == v1alpha1.SnapshotBackup {
		kind = "VolumeSnapshot"
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "BackupDeleted", "Retention",
		"%s %s (scheduled %s, %s) deleted: the retention policy no longer keeps it", kind, b.name, stamp(b.scheduled), b.result)
	return true, nil
}

// describeBlocked names a backup that is being deleted and what holds it.
func describeBlocked(obj client.Object) string {
	if f := obj.GetFinalizers(); len(f) > 0 {
		return fmt.Sprintf("%s (held by %s)", obj.GetName(), strings.Join(f, ", "))
	}
	return obj.GetName()
}

// pruneJobs bounds the Job history: of the finished run Jobs, the newest
// successfulJobsHistoryLimit successful and failedJobsHistoryLimit failed
// ones stay. A Job goes only once its backup has its result recorded, or
// has no backup any more.
func (r *Reconciler) pruneJobs(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, out *outcome) {
	type finished struct {
		job       *batchv1.Job
		succeeded bool
	}
	var jobs []finished
	for name, j := range obs.runJobs {
		done, succeeded, _, _ := jobOutcome(j)
		if !done || j.DeletionTimestamp != nil {
			continue
		}
		if b := obs.backupNamed(name); b != nil && !b.recorded {
			continue
		}
		jobs = append(jobs, finished{job: j, succeeded: succeeded})
	}
	slices.SortFunc(jobs, func(a, b finished) int {
		return cmp.Or(b.job.CreationTimestamp.Compare(a.job.CreationTimestamp.Time), cmp.Compare(b.job.Name, a.job.Name))
	})
	keepSucceeded := int(ptr.Deref(bj.Spec.SuccessfulJobsHistoryLimit, 3))
	keepFailed := int(ptr.Deref(bj.Spec.FailedJobsHistoryLimit, 3))
	for _, f := range jobs {
		left := &keepFailed
		if f.succeeded {
			left = &keepSucceeded
		}
		if *left > 0 {
			*left--
			continue
		}
		if err := r.deleteJob(ctx, f.job); err != nil {
			out.Add(err, false)
			continue
		}
		delete(obs.runJobs, f.job.Name)
	}
}
