package backupjob

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/pgbackup"
)

// recordResults writes on each backup claim (or object-store record) whose
// run's Job finished how it ended, before anything may delete the Job: the
// result must outlive the bounded Job history. A running backup whose Job
// is gone (see jobGone) gets it back only when it never had one.
func (r *Reconciler) recordResults(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) {
	for _, b := range obs.backups {
		if b.kind == v1alpha1.SnapshotBackup && b.result == v1alpha1.BackupSucceeded && !b.deleting() &&
			b.object.GetLabels()[ResultLabel] != string(v1alpha1.BackupSucceeded) {
			out.Add(r.labelSnapshotSucceeded(ctx, b), false)
			continue
		}
		if b.kind == v1alpha1.SnapshotBackup || b.result != v1alpha1.BackupRunning || b.deleting() {
			continue
		}
		job := obs.runJobs[b.name]
		if job == nil {
			live, err := r.liveJob(ctx, bj.Namespace, b.name)
			if err != nil {
				out.Add(err, false)
				continue
			}
			if live == nil {
				r.jobGone(ctx, bj, obs, b, now, out)
				continue
			}
			obs.runJobs[b.name] = live
			job = live
		}
		finished, succeeded, message, at := jobOutcome(job)
		if !finished {
			continue
		}
		if at.IsZero() {
			at = now
		}
		if succeeded {
			if err := r.recordResultWith(ctx, b, v1alpha1.BackupSucceeded, v1alpha1.BackupJobRunSucceededReason, "", at, r.methodResult(ctx, bj, b)); err != nil {
				out.Add(err, false)
				continue
			}
			r.Recorder.Eventf(bj, job, corev1.EventTypeNormal, "RunSucceeded", "Run", "Run %s succeeded: %s", b.name, completeMessage(b))
			continue
		}
		if err := r.recordResult(ctx, b, v1alpha1.BackupFailed, v1alpha1.BackupJobJobFailedReason, message, at); err != nil {
			out.Add(err, false)
			continue
		}
		r.Recorder.Eventf(bj, job, corev1.EventTypeWarning, "RunFailed", "Run", "Run %s failed: %s", b.name, message)
	}
}

// jobGone handles a running backup claim whose Job does not exist. The
// cache may not show yet the result this process recorded before the
// history limit deleted the Job: the claim is read again. A claim whose Job
// was created once (status.active listed it, or, from earlier versions,
// the claim's JobStartedAnnotation) gets none again: its copy may have run,
// whole or in part, and the run failed for want of a result. One whose Job
// was never created (the create failed) gets it.
func (r *Reconciler) jobGone(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, now time.Time, out *outcome) {
	var live client.Object
	var fresh *backup
	switch b.kind {
	case v1alpha1.ObjectStoreBackup:
		record := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b.object), record); err != nil {
			out.Add(client.IgnoreNotFound(fmt.Errorf("get the record of object-store backup %s: %w", b.name, err)), false)
			return
		}
		live, fresh = record, recordBackup(record)
	default:
		claim := &corev1.PersistentVolumeClaim{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b.object), claim); err != nil {
			out.Add(client.IgnoreNotFound(fmt.Errorf("get backup claim %s: %w", b.name, err)), false)
			return
		}
		live, fresh = claim, claimBackup(claim)
	}
	if fresh.result != v1alpha1.BackupRunning {
		*b = *fresh
		return
	}
	if uid, started := jobRecorded(bj, live); started {
		b.object = live
		out.Add(r.recordResult(ctx, b, v1alpha1.BackupFailed, v1alpha1.BackupJobJobFailedReason,
			fmt.Sprintf("Job %s (UID %s) was deleted before its result was recorded: the backup may be incomplete", b.name, uid), now), false)
		return
	}
	r.ensureRunJob(ctx, bj, obs, run{name: b.name, scheduled: b.scheduled, runNow: b.runNow}, out)
}

// jobRecorded is the UID of the Job that was made for the backup claim
// (or record) backup, as status.active (or the claim itself) recorded it.
func jobRecorded(bj *v1alpha1.BackupJob, backup client.Object) (types.UID, bool) {
	for _, ref := range bj.Status.Active {
		if ref.Kind == "Job" && ref.Name == backup.GetName() {
			return ref.UID, true
		}
	}
	uid, ok := backup.GetAnnotations()[JobStartedAnnotation]
	return types.UID(uid), ok
}

// liveJob reads a run's Job from the API server, for a Job the cache may
// not have seen yet; nil when it does not exist.
func (r *Reconciler) liveJob(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, job)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get Job %s: %w", name, err)
	}
	return job, nil
}

// recordResult writes a run's result on its backup claim (or record), and
// sets it on b.
func (r *Reconciler) recordResult(ctx context.Context, b *backup, result v1alpha1.BackupResult, reason, message string, at time.Time) error {
	return r.recordResultWith(ctx, b, result, reason, message, at, nil)
}

// recordResultWith records the result as recordResult does, with more
// annotations that say what the backup holds.
func (r *Reconciler) recordResultWith(ctx context.Context, b *backup, result v1alpha1.BackupResult, reason, message string, at time.Time, annotations map[string]string) error {
	if b.kind == v1alpha1.SnapshotBackup {
		return nil // a snapshot's status is its record
	}
	updated, ok := b.object.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("backup %s: %T is not an object", b.name, b.object)
	}
	labels, all := updated.GetLabels(), updated.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if all == nil {
		all = map[string]string{}
	}
	labels[ResultLabel] = string(result)
	all[finishedAnnotation] = stamp(at)
	for k, v := range annotations {
		all[k] = v
	}
	if result == v1alpha1.BackupFailed {
		all[ResultReasonAnnotation] = reason
		all[ResultMessageAnnotation] = kit.TruncateMessage(message)
	}
	updated.SetLabels(labels)
	updated.SetAnnotations(all)
	if err := r.Client.Patch(ctx, updated, client.MergeFrom(b.object)); err != nil {
		return fmt.Errorf("record the result of run %s on its %s: %w", b.name, recordNoun(b), err)
	}
	if size, err := resource.ParseQuantity(all[pgbackup.StoreSizeAnnotation]); err == nil && b.kind == v1alpha1.ObjectStoreBackup {
		b.size = &size
	}
	b.object = updated
	b.result, b.recorded, b.finished = result, true, at
	if result == v1alpha1.BackupFailed {
		b.reason, b.message = reason, kit.TruncateMessage(message)
	}
	return nil
}

// deleteJob deletes a Job with its pods. The API's default for Jobs is to
// orphan them; the UID guards against a Job recreated under the name.
func (r *Reconciler) deleteJob(ctx context.Context, j *batchv1.Job) error {
	uid := j.UID
	err := r.Client.Delete(ctx, j, client.Preconditions{UID: &uid}, client.PropagationPolicy("Background"))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Job %s: %w", j.Name, err)
	}
	return nil
}

// labelSnapshotSucceeded labels a ready snapshot Succeeded (ResultLabel),
// as a finished backup claim is: its status stays its record, the label is
// what selects it among the backups a PostgresCluster may be restored from
// (spec.bootstrap.fromBackup). Only success is labelled: a snapshot failed
// by its deadline may still become ready.
func (r *Reconciler) labelSnapshotSucceeded(ctx context.Context, b *backup) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, ResultLabel, v1alpha1.BackupSucceeded))
	updated := b.object.DeepCopyObject().(client.Object)
	if err := r.Client.Patch(ctx, updated, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label snapshot %s Succeeded: %w", b.name, err)
	}
	b.object = updated
	return nil
}
