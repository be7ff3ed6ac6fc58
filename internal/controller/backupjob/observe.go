package backupjob

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/platform"
)

// observation is what one reconcile saw of a BackupJob's world, and, once
// the reconcile has acted, what it made of it: runs it started are added
// as running backups, results it recorded are set. Status is computed from
// it alone.
type observation struct {
	// source is spec.source's claim, nil when it does not exist.
	source *corev1.PersistentVolumeClaim
	// snapshotsServed tells whether the cluster serves VolumeSnapshots.
	snapshotsServed bool
	// postgres is what the PostgreSQL backup methods saw and did.
	postgres postgresObservation
	// backups are the claims, snapshots or object-store records that runs
	// made, newest first.
	backups []*backup
	// inherited names the backups labelled for the BackupJob's name that an
	// earlier BackupJob of that name made (see MadeByAnnotation): listed
	// nowhere else, never deleted.
	inherited []string
	// lastFailure is the most recent failed run, taken by the reconcile
	// before retention and the Job history limit remove its objects.
	lastFailure *v1alpha1.BackupRunFailure
	// runJobs are the runs' Jobs, by run name.
	runJobs map[string]*batchv1.Job
	// drillJobs and drillClaims are the restore drills' objects, by the
	// name of the backup they restore.
	drillJobs   map[string]*batchv1.Job
	drillClaims map[string]*corev1.PersistentVolumeClaim
}

// postgresObservation is what one reconcile saw of the PostgresClusters a
// BackupJob's runs and drills use, and what the PostgreSQL methods made of
// it.
type postgresObservation struct {
	// served tells whether the cluster serves PostgresClusters.
	served bool
	// cluster is spec.source's PostgresCluster, nil when there is none.
	cluster *v1alpha1.PostgresCluster
	// fences are the fences runs of the BackupJob hold, on any
	// PostgresCluster of its namespace.
	fences []*fence
	// waiting is why a due run of a PostgresCluster waits, nil when none
	// does.
	waiting *cause
	// unfenceAfterRecord is true when a run timed out whose failure
	// status.lastFailure does not hold yet: this reconcile's status
	// records it, and the next removes the fence.
	unfenceAfterRecord bool
	// drillClusters are the temporary PostgresClusters of PostgreSQL
	// drills, by the name of the backup they were restored from.
	drillClusters map[string]*v1alpha1.PostgresCluster
}

// backup is a run's claim, snapshot or object-store record as status and
// retention see it.
type backup struct {
	name      string
	kind      v1alpha1.BackupKind
	scheduled time.Time
	// result is Running until the run ends.
	result          v1alpha1.BackupResult
	reason, message string
	// finished is when the run ended, when known.
	finished time.Time
	// recorded tells whether result is written on the object (a claim's
	// ResultLabel); a snapshot's result is its own status.
	recorded bool
	// size is the claim's capacity or the snapshot's restore size;
	// requested is the storage a backup claim asked for.
	size         *resource.Quantity
	requested    resource.Quantity
	storageClass *string
	pinned       bool
	runNow       string
	// verified is the result of its drill, empty when none finished.
	verified        v1alpha1.VerificationResult
	verifiedMessage string
	// object is the claim or snapshot as last seen, for writes.
	object client.Object
}

func (b *backup) deleting() bool { return b.object.GetDeletionTimestamp() != nil }

// observe reads the source claim from the API server (it carries none of
// the operator's labels, so the cache does not hold it) and the
// BackupJob's own objects from the cache.
func (r *Reconciler) observe(ctx context.Context, bj *v1alpha1.BackupJob, now time.Time) (*observation, error) {
	obs := &observation{
		snapshotsServed: r.SnapshotsServed,
		postgres:        postgresObservation{served: r.PostgresClustersServed, drillClusters: map[string]*v1alpha1.PostgresCluster{}},
		runJobs:         map[string]*batchv1.Job{},
		drillJobs:       map[string]*batchv1.Job{},
		drillClaims:     map[string]*corev1.PersistentVolumeClaim{},
	}
	if name := bj.Spec.Source.PersistentVolumeClaimName; name != "" {
		source := &corev1.PersistentVolumeClaim{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: bj.Namespace, Name: name}, source)
		switch {
		case err == nil:
			obs.source = source
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get the source claim %s: %w", name, err)
		}
	}
	for _, m := range r.methods() {
		if err := m.observe(ctx, bj, obs); err != nil {
			return nil, err
		}
	}

	selector := client.MatchingLabelsSelector{Selector: objectsOf(bj.Name)}
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(bj.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the runs' Jobs: %w", err)
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if name := j.Labels[DrillLabel]; name != "" {
			obs.drillJobs[name] = j
		} else if name := j.Labels[RunLabel]; name != "" {
			obs.runJobs[name] = j
		}
	}

	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(bj.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the backup claims: %w", err)
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if name := c.Labels[DrillLabel]; name != "" {
			obs.drillClaims[name] = c
		} else if isBackup(bj.Name, c) {
			obs.addBackup(bj, c, claimBackup(c))
		}
	}

	records := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, records, client.InNamespace(bj.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the records of object-store backups: %w", err)
	}
	for i := range records.Items {
		if cm := &records.Items[i]; isBackup(bj.Name, cm) {
			obs.addBackup(bj, cm, recordBackup(cm))
		}
	}

	if obs.snapshotsServed {
		snapshots := &snapshotv1.VolumeSnapshotList{}
		if err := r.Client.List(ctx, snapshots, client.InNamespace(bj.Namespace), selector); err != nil {
			return nil, fmt.Errorf("list the backup snapshots: %w", err)
		}
		for i := range snapshots.Items {
			if s := &snapshots.Items[i]; isBackup(bj.Name, s) {
				obs.addBackup(bj, s, snapshotBackup(s, now))
			}
		}
	}
	sortBackups(obs.backups)
	return obs, nil
}

// isBackup tells whether obj, labelled for BackupJob backupJob, is a run's
// backup: named after its run, with a name only a run of backupJob has. A
// claim made from a copy of a backup's manifest keeps the labels, not the
// name; and labels put by hand on a claim of another name never make it a
// backup, so that retention never deletes it: labels are written by
// whoever may patch the claim, its name by whoever created it.
func isBackup(backupJob string, obj client.Object) bool {
	name := obj.GetName()
	return obj.GetLabels()[RunLabel] == name && isRunName(backupJob, name)
}

// addBackup adds b, made from obj, to the backups of bj, or to the ones it
// inherited.
func (o *observation) addBackup(bj *v1alpha1.BackupJob, obj client.Object, b *backup) {
	if madeBy(bj, obj) {
		o.backups = append(o.backups, b)
	} else {
		o.inherited = append(o.inherited, b.name)
	}
}

// madeBy tells whether bj made obj, one of the backups labelled for its
// name: every run records bj's UID in MadeByAnnotation. One without it was
// made before runs recorded it, and is bj's only when the operator's own
// field manager wrote its run label, at its creation, no earlier than bj
// (to the second): an earlier BackupJob of the name was gone before bj was
// created. An object labelled by hand later is not.
func madeBy(bj *v1alpha1.BackupJob, obj client.Object) bool {
	if uid, ok := obj.GetAnnotations()[MadeByAnnotation]; ok {
		return types.UID(uid) == bj.UID
	}
	return labelledByOperator(obj, RunLabel) && !obj.GetCreationTimestamp().Time.Before(bj.CreationTimestamp.Time)
}

// labelledByOperator tells whether the operator's field manager owns obj's
// label key: it wrote it, and nobody has written it since.
func labelledByOperator(obj client.Object, key string) bool {
	field := []byte(strconv.Quote("f:" + key))
	for _, m := range obj.GetManagedFields() {
		if m.Manager == platform.Name && m.FieldsV1 != nil && bytes.Contains(m.FieldsV1.Raw, field) {
			return true
		}
	}
	return false
}

// sortBackups orders backups newest first, as retention does.
func sortBackups(backups []*backup) {
	slices.SortFunc(backups, func(a, b *backup) int {
		return cmp.Or(b.scheduled.Compare(a.scheduled), cmp.Compare(b.name, a.name))
	})
}

func claimBackup(c *corev1.PersistentVolumeClaim) *backup {
	b := commonBackup(c)
	b.kind = v1alpha1.VolumeBackup
	b.requested = c.Spec.Resources.Requests[corev1.ResourceStorage]
	b.storageClass = c.Spec.StorageClassName
	if capacity, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		b.size = &capacity
	}
	switch result := v1alpha1.BackupResult(c.Labels[ResultLabel]); result {
	case v1alpha1.BackupSucceeded, v1alpha1.BackupFailed:
		b.result, b.recorded = result, true
	default:
		b.result = v1alpha1.BackupRunning
	}
	return b
}

// snapshotDeadline bounds how long a snapshot may take to become ready,
// from its creation, as defaultActiveDeadline bounds a Job: a snapshot
// still not ready then (a CSI driver that keeps failing, or no snapshot
// controller at all) is a failed run, and a Forbid policy no longer waits
// for it.
const snapshotDeadline = defaultActiveDeadline

// snapshotBackup is the backup a VolumeSnapshot holds at now. An error in
// its status is not a failure: the snapshot controller keeps retrying and
// clears it on success. The snapshot fails only when it is not ready by
// snapshotDeadline.
func snapshotBackup(s *snapshotv1.VolumeSnapshot, now time.Time) *backup {
	b := commonBackup(s)
	b.kind = v1alpha1.SnapshotBackup
	b.result = v1alpha1.BackupRunning
	b.recorded = true // the snapshot's status is its record
	st := s.Status
	if st == nil {
		st = &snapshotv1.VolumeSnapshotStatus{}
	}
	if st.RestoreSize != nil {
		size := st.RestoreSize.DeepCopy()
		b.size = &size
	}
	var lastError string
	if st.Error != nil {
		lastError = "an error"
		if st.Error.Message != nil {
			lastError = fmt.Sprintf("the error %q", *st.Error.Message)
		}
	}
	deadline := s.CreationTimestamp.Add(snapshotDeadline)
	switch {
	case st.ReadyToUse != nil && *st.ReadyToUse:
		b.result = v1alpha1.BackupSucceeded
		if st.CreationTime != nil {
			b.finished = st.CreationTime.Time
		}
	case !now.Before(deadline):
		b.result, b.reason, b.finished = v1alpha1.BackupFailed, v1alpha1.BackupJobSnapshotFailedReason, deadline
		b.message = fmt.Sprintf("VolumeSnapshot %s was not ready %s after its creation", s.Name, snapshotDeadline)
		if lastError != "" {
			b.message += "; the snapshot controller last reported " + lastError
		}
	case lastError != "":
		b.message = fmt.Sprintf("VolumeSnapshot %s: the snapshot controller reports %s and retries until %s", s.Name, lastError, stamp(deadline))
	}
	return b
}

func commonBackup(obj client.Object) *backup {
	a := obj.GetAnnotations()
	b := &backup{
		name:            obj.GetName(),
		pinned:          obj.GetLabels()[v1alpha1.PinnedLabel] == "true",
		runNow:          a[RunNowAnnotation],
		reason:          a[ResultReasonAnnotation],
		message:         a[ResultMessageAnnotation],
		verified:        v1alpha1.VerificationResult(a[VerifiedAnnotation]),
		verifiedMessage: a[VerifiedMessageAnnotation],
		object:          obj,
	}
	if t, err := time.Parse(time.RFC3339, a[ScheduledTimeAnnotation]); err == nil {
		b.scheduled = t
	} else {
		// Without the annotation (removed by hand), the object's creation
		// is the closest time there is.
		b.scheduled = obj.GetCreationTimestamp().Time
	}
	if t, err := time.Parse(time.RFC3339, a[finishedAnnotation]); err == nil {
		b.finished = t
	}
	return b
}

// finishedAnnotation, on a backup claim, is when its run's Job finished.
const finishedAnnotation = "example.com/finished-time"

// jobOutcome tells whether a Job finished, and how.
func jobOutcome(j *batchv1.Job) (finished, succeeded bool, message string, at time.Time) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, "", c.LastTransitionTime.Time
		case batchv1.JobFailed:
			msg := fmt.Sprintf("Job %s failed", j.Name)
			if c.Reason != "" {
				msg += " (" + c.Reason + ")"
			}
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return true, false, msg, c.LastTransitionTime.Time
		}
	}
	return false, false, "", time.Time{}
}

// backupNamed returns the backup of that name, or nil.
func (o *observation) backupNamed(name string) *backup {
	for _, b := range o.backups {
		if b.name == name {
			return b
		}
	}
	return nil
}

// running are the runs in progress: backups without a result.
func (o *observation) running() []*backup {
	var out []*backup
	for _, b := range o.backups {
		if b.result == v1alpha1.BackupRunning && !b.deleting() {
			out = append(out, b)
		}
	}
	return out
}
