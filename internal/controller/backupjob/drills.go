package backupjob

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
)

// drillCandidate is the backup to restore next, or nil: the newest
// successful backup, once everyNth successful backups have been made since
// the newest one that was checked. backups are newest first.
func drillCandidate(backups []*backup, everyNth int32) *backup {
	everyNth = max(everyNth, 1)
	var newest *backup
	var pending int32
	for _, b := range backups {
		if b.result != v1alpha1.BackupSucceeded || b.deleting() {
			continue
		}
		if b.verified != "" {
			break
		}
		if newest == nil {
			newest = b
		}
		pending++
	}
	if pending >= everyNth {
		return newest
	}
	return nil
}

// runDrills records the drills that finished on their backups and removes
// their claim or temporary PostgresCluster and Job, moves PostgreSQL drills
// on, then starts the next drill when one is due. One drill runs at a
// time.
func (r *Reconciler) runDrills(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) {
	for name, job := range obs.drillJobs {
		finished, succeeded, message, _ := jobOutcome(job)
		b := obs.backupNamed(name)
		if !finished {
			if b != nil {
				b.verified = v1alpha1.VerificationRunning
			}
			continue
		}
		if !succeeded {
			if obs.postgres.drillClusters[name] != nil {
				message = r.verifyMessage(ctx, job, message)
			}
			message = fmt.Sprintf("Restore drill of backup %s failed: %s", name, message)
		}
		r.finishDrill(ctx, bj, obs, b, succeeded, message, out)
		if b == nil {
			if err := r.removeDrill(ctx, bj, obs, name); err != nil {
				out.Add(err, false)
			}
		}
	}
	// A drill claim or cluster without its Job: the Job's creation failed,
	// a PostgreSQL drill's cluster is still starting, or the drill's
	// backup is gone.
	for name := range obs.drillClaims {
		if obs.drillJobs[name] == nil {
			if b := obs.backupNamed(name); b != nil && b.verified == "" && bj.Spec.Verify != nil {
				r.startDrill(ctx, bj, obs, b, out)
				continue
			}
			if err := r.removeDrill(ctx, bj, obs, name); err != nil {
				out.Add(err, false)
			}
		}
	}
	for _, m := range r.methods() {
		m.advanceDrills(ctx, bj, obs, now, out)
	}

	if bj.Spec.Verify == nil || len(obs.drillJobs) > 0 || len(obs.postgres.drillClusters) > 0 {
		return
	}
	if b := drillCandidate(obs.backups, bj.Spec.Verify.EveryNth); b != nil {
		r.startDrill(ctx, bj, obs, b, out)
	}
}

// finishDrill records the result of the drill of backup b on it, removes
// the drill's objects and says so.
func (r *Reconciler) finishDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, passed bool, message string, out *outcome) {
	if b == nil {
		return
	}
	result, reason := v1alpha1.VerificationPassed, "DrillPassed"
	if !passed {
		result, reason = v1alpha1.VerificationFailed, "DrillFailed"
	}
	if err := r.recordVerification(ctx, b, result, message); err != nil {
		out.Add(err, false)
		return
	}
	if err := r.removeDrill(ctx, bj, obs, b.name); err != nil {
		out.Add(err, false)
		return
	}
	if passed {
		r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, reason, "Verify", "Restore drill of backup %s passed", b.name)
	} else {
		r.Recorder.Eventf(bj, nil, corev1.EventTypeWarning, reason, "Verify", "%s", message)
	}
}

// startDrill creates a drill's claim from backup b and its verify Job, or,
// for a PostgresCluster's backup, its temporary cluster.
func (r *Reconciler) startDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, out *outcome) {
	if m := r.methodOf(bj); m != nil {
		m.startDrill(ctx, bj, obs, b, out)
		return
	}
	// The API server refuses this; a BackupJob stored before its rules
	// were is reported, not run.
	if bj.Spec.Verify.JobTemplate == nil {
		out.Report(v1alpha1.BackupJobInvalidSpecReason, "spec.verify.jobTemplate is required to check a claim's backups: no restore drill runs")
		return
	}
	if b.kind == v1alpha1.SnapshotBackup && obs.source != nil {
		// A snapshot is restored into the class of the volume it was taken
		// of, and at least at its size.
		if b.storageClass == nil {
			b.storageClass = obs.source.Spec.StorageClassName
		}
		if b.size == nil {
			b.requested = obs.source.Spec.Resources.Requests[corev1.ResourceStorage]
		}
	}
	desired := desiredDrillJob(bj, b)
	if r.refuseTemplate(bj, verifyTemplatePath, bj.Spec.Verify.JobTemplate, desired, out) {
		return
	}
	claim := &corev1.PersistentVolumeClaim{}
	if res := r.Children.Ensure(ctx, bj, children.Typed(desiredDrillClaim(bj, b)), claim, children.WithoutCreateEvent()); r.judgeCreate(res, out) != runStarted {
		return
	}
	obs.drillClaims[b.name] = claim
	job := &batchv1.Job{}
	if res := r.Children.Ensure(ctx, bj, children.Typed(desired), job, children.WithoutCreateEvent()); r.judgeCreate(res, out) != runStarted {
		return
	}
	obs.drillJobs[b.name] = job
	b.verified = v1alpha1.VerificationRunning
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "DrillStarted", "Verify",
		"Restore drill of backup %s started: claim %s restored from it, checked by Job %s", b.name, claim.Name, job.Name)
}

// recordVerification writes a drill's result on its backup.
func (r *Reconciler) recordVerification(ctx context.Context, b *backup, result v1alpha1.VerificationResult, message string) error {
	updated, ok := b.object.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("backup %s: %T is not an object", b.name, b.object)
	}
	annotations := updated.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[VerifiedAnnotation] = string(result)
	if message != "" {
		annotations[VerifiedMessageAnnotation] = kit.TruncateMessage(message)
	} else {
		delete(annotations, VerifiedMessageAnnotation)
	}
	updated.SetAnnotations(annotations)
	if err := r.Client.Patch(ctx, updated, client.MergeFrom(b.object)); err != nil {
		return fmt.Errorf("record the restore drill of backup %s: %w", b.name, err)
	}
	b.object, b.verified, b.verifiedMessage = updated, result, kit.TruncateMessage(message)
	return nil
}

// removeDrill deletes a drill's Job (with its pods), and its claim or
// temporary PostgresCluster.
func (r *Reconciler) removeDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, name string) error {
	if j := obs.drillJobs[name]; j != nil {
		if err := r.deleteJob(ctx, j); err != nil {
			return err
		}
		delete(obs.drillJobs, name)
	}
	if err := r.removeDrillCluster(ctx, bj, obs, name); err != nil {
		return err
	}
	if c := obs.drillClaims[name]; c != nil {
		// Only a claim the BackupJob controls: never a backup.
		if !isControlledBy(c, bj) {
			return nil
		}
		uid := c.UID
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the restore drill's claim %s: %w", c.Name, err)
		}
		delete(obs.drillClaims, name)
	}
	return nil
}

func isControlledBy(obj client.Object, bj *v1alpha1.BackupJob) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == bj.UID {
			return true
		}
	}
	return false
}
