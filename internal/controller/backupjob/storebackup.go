package backupjob

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgbackup"
	"example.com/platform-operator/internal/pgspec"
)

// A run of a PostgresCluster source with an objectStore target is a base
// backup into the cluster's object store (spec.backup.objectStore), the
// location its WAL is archived to: a Job streams a tar of the primary
// (`instance basebackup-to-store`), as the backup role, and writes the
// backup under the run's name there. The primary, because a backup
// without its WAL in the archive restores nothing: the primary ends the
// backup only once that WAL is archived, a standby does not wait.
//
// The backup's data is in the store, where the operator does not look.
// What status says of it is read from its record, a ConfigMap named after
// the run and labelled as a backup claim is (run, result, scheduled time,
// who made it), on which the result and, from the Job's termination
// message, where the backup starts and ends are written: it outlives the
// bounded Job history as a claim does, and the runs, retention and status
// code treat it as one more kind of backup. Unlike a claim, deleting the
// record deletes nothing in the store: retention and deletionPolicy
// Delete leave object-store backups alone (and say so in
// RetentionApplied). What deletes them from the store is the cluster's
// spec.backup.retention, run by its primary, which deletes a base backup
// together with the WAL only it needs. The record goes once the cluster's
// status shows the store's oldest backup ended after it (goneFromStore)
// and the BackupJob's retention drops it: the status counts the store's
// backups, it does not name them.

// objectStoreTarget returns spec.target.objectStore, or nil for another
// target.
func objectStoreTarget(bj *v1alpha1.BackupJob) *v1alpha1.BackupObjectStoreTarget {
	if bj.Spec.Target == nil {
		return nil
	}
	return bj.Spec.Target.ObjectStore
}

// startStoreBackupRun starts an object-store run: its record, annotated
// with the primary it copies and the store, then its Job.
func (r *Reconciler) startStoreBackupRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, out *outcome) startOutcome {
	source, wait := pgbackup.ChooseStoreBackupSource(obs.postgres.cluster)
	if wait != nil {
		obs.postgres.waiting = wait
		return runWaiting
	}
	record := &corev1.ConfigMap{}
	desired := desiredStoreBackupRecord(bj, rn, obs.postgres.cluster, instanceOf(obs.postgres.cluster, source))
	res := r.Children.Ensure(ctx, bj, children.Typed(desired), record, children.OwnedBy(isRunOf(bj, rn.name)), children.WithoutCreateEvent())
	if o := r.judgeCreate(res, out); o != runStarted {
		return o
	}
	obs.backups = append(obs.backups, recordBackup(record))
	sortBackups(obs.backups)
	if o := r.ensureRunJob(ctx, bj, obs, rn, out); o != runStarted {
		return o
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
		"Run %s started (scheduled for %s): Job %s streams a base backup of the primary %s of PostgresCluster %s into its object store %s",
		rn.name, stamp(rn.scheduled), rn.name, source, obs.postgres.cluster.Name, desired.Annotations[v1alpha1.BackupObjectStoreAnnotation])
	return runStarted
}

// desiredStoreBackupRecord is the record of an object-store run: a
// ConfigMap without data, named and labelled as the run's backup, and
// annotated with the cluster, the instance copied, its timeline and the
// store's folder. Like a backup claim it has no owner reference: the
// backup it records outlives the BackupJob.
func desiredStoreBackupRecord(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source *v1alpha1.PostgresInstanceStatus) *corev1.ConfigMap {
	annotations := backupAnnotations(bj, rn)
	annotations[v1alpha1.BackupSourceClusterAnnotation] = pg.Name
	annotations[v1alpha1.BackupSourceInstanceAnnotation] = source.Name
	if source.Timeline > 0 {
		annotations[v1alpha1.BackupTimelineAnnotation] = strconv.FormatInt(source.Timeline, 10)
	}
	if pg.Spec.Backup != nil {
		annotations[v1alpha1.BackupObjectStoreAnnotation] = storeFolder(&pg.Spec.Backup.ObjectStore, pg.Namespace, pg.Name)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rn.name, Namespace: bj.Namespace, Labels: runLabels(bj.Name, rn.name), Annotations: annotations,
		},
	}
}

// storeFolder is the folder of a cluster's backups in store, as a
// path-style S3 URL: what a person needs to find them.
func storeFolder(store *v1alpha1.PostgresObjectStore, namespace, cluster string) string {
	return strings.TrimSuffix(store.Endpoint, "/") + "/" + store.Bucket + "/" + pgspec.StorePath(store, namespace, cluster)
}

// desiredStoreBackupJob is the Job of an object-store run: `instance
// basebackup-to-store` from the primary source, through its stable DNS
// name, into the store of the cluster's spec.backup, with the backup
// role's password and the store's keys from their Secrets. It mounts no
// claim. pg must have spec.backup.
func desiredStoreBackupJob(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source string, opts baseBackupOptions) *batchv1.Job {
	store := &pg.Spec.Backup.ObjectStore
	env := []corev1.EnvVar{
		{Name: pgspec.EnvPGBinDir, Value: pgspec.BinDir},
		pgspec.SecretEnv(pgspec.EnvPassword, pgspec.BackupSecret(pg.Name), corev1.BasicAuthPasswordKey),
	}
	spec := pgspec.ToolJob{
		Tool:          pgspec.ToolStoreBackup,
		Image:         pg.Spec.Image,
		OperatorImage: opts.operatorImage,
		Args: []string{"basebackup-to-store", "--host", pgspec.InstanceHost(source, pg.Name, pg.Namespace, opts.clusterDomain),
			"--label", rn.name, "--cluster", pg.Name, "--namespace", pg.Namespace},
		Env:      append(env, pgspec.StoreEnv(pgspec.ArchiveStore, store, pgspec.StorePath(store, pg.Namespace, pg.Name))...),
		Retries:  baseBackupRetries,
		CASecret: pgspec.ServerSecret(pg.Name),
	}.Spec()
	job := jobFromTemplate(bj, &v1alpha1.BackupJobTemplate{Spec: spec}, rn.name, runLabels(bj.Name, rn.name), nil, nil)
	job.Annotations = mergeMaps(job.Annotations, runAnnotations(rn))
	return job
}

// recordBackup is the backup a record ConfigMap tells of.
func recordBackup(cm *corev1.ConfigMap) *backup {
	b := commonBackup(cm)
	b.kind = v1alpha1.ObjectStoreBackup
	switch result := v1alpha1.BackupResult(cm.Labels[ResultLabel]); result {
	case v1alpha1.BackupSucceeded, v1alpha1.BackupFailed:
		b.result, b.recorded = result, true
	default:
		b.result = v1alpha1.BackupRunning
	}
	if size, err := resource.ParseQuantity(cm.Annotations[pgbackup.StoreSizeAnnotation]); err == nil {
		b.size = &size
	}
	return b
}

// recordNoun names what holds the result of backup b, for messages.
func recordNoun(b *backup) string {
	if b.kind == v1alpha1.ObjectStoreBackup {
		return "record"
	}
	return "claim"
}

// completeMessage says that backup b, whose run succeeded, is complete.
func completeMessage(b *backup) string {
	if b.kind == v1alpha1.ObjectStoreBackup {
		return fmt.Sprintf("base backup %s is in the object store %s", b.name, b.object.GetAnnotations()[v1alpha1.BackupObjectStoreAnnotation])
	}
	return fmt.Sprintf("backup claim %s is complete", b.name)
}
