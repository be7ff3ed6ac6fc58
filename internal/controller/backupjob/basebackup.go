package backupjob

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup"
	"example.com/platform-operator/internal/pgspec"
)

// A run of a PostgresCluster source with a volume target is a base
// backup: a Job streams a copy of one ready instance (the most caught-up
// replica, else the primary) with pg_basebackup, as the cluster's backup
// role (replication only), into the run's new claim, with the WAL that
// makes the copy consistent, and checks it against its manifest. Nothing
// is fenced: writes go on and every replica stays a failover candidate.
// The claim's data directory (pgdata) is what a PostgresCluster restored
// from it (spec.bootstrap.fromBackup) starts from. The run's result is its
// Job's, recorded as for any copy Job.

const (
	// baseBackupRetries is how often a failed copy is tried again: the
	// copy restarts from nothing each time (a good copy already made is
	// kept), so a lost connection costs one more attempt, not the run.
	baseBackupRetries = 2
)

// baseBackupOptions are what a base backup Job needs besides the
// BackupJob and the cluster.
type baseBackupOptions struct {
	operatorImage, clusterDomain string
}

// startBaseBackupRun starts a base backup run: its claim, annotated with
// the instance it copies, then its Job.
func (r *Reconciler) startBaseBackupRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, out *outcome) startOutcome {
	source, wait := pgbackup.ChooseBaseBackupSource(obs.postgres.cluster)
	if wait != nil {
		obs.postgres.waiting = wait
		return runWaiting
	}
	desired := desiredBaseBackupClaim(bj, rn, obs.postgres.cluster, instanceOf(obs.postgres.cluster, source))
	if o := r.startClaimRun(ctx, bj, obs, rn, desired, out); o != runStarted {
		return o
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
		"Run %s started (scheduled for %s): Job %s streams a base backup of instance %s of PostgresCluster %s into the new claim %s",
		rn.name, stamp(rn.scheduled), rn.name, source, obs.postgres.cluster.Name, rn.name)
	return runStarted
}

// desiredBaseBackupClaim is the claim of a base backup run: the size of
// spec.target.volume, else the cluster's storage size, in the target's
// storage class, else the cluster's (a restore clones the claim, which
// needs the class of the cluster it makes), annotated with the cluster,
// the instance copied and its timeline.
func desiredBaseBackupClaim(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source *v1alpha1.PostgresInstanceStatus) *corev1.PersistentVolumeClaim {
	target := volumeTarget(bj)
	size := pg.Spec.Storage.Size
	if target.Size != nil {
		size = *target.Size
	}
	annotations := backupAnnotations(bj, rn)
	annotations[v1alpha1.BackupSourceClusterAnnotation] = pg.Name
	annotations[v1alpha1.BackupSourceInstanceAnnotation] = source.Name
	if source.Timeline > 0 {
		annotations[v1alpha1.BackupTimelineAnnotation] = strconv.FormatInt(source.Timeline, 10)
	}
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rn.name, Namespace: bj.Namespace, Labels: runLabels(bj.Name, rn.name), Annotations: annotations,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			StorageClassName: pg.Spec.Storage.StorageClassName,
		},
	}
	if target.StorageClassName != "" {
		claim.Spec.StorageClassName = ptr.To(target.StorageClassName)
	}
	return claim
}

// desiredBaseBackupJob is the Job of a base backup run: `instance
// basebackup` from the instance named on the run's claim, through its
// stable DNS name under the cluster's headless Service, into /backup/pgdata
// of the run's claim, with the backup role's password from its Secret.
func desiredBaseBackupJob(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source string, opts baseBackupOptions) *batchv1.Job {
	spec := pgspec.ToolJob{
		Tool:          pgspec.ToolBaseBackup,
		Image:         pg.Spec.Image,
		OperatorImage: opts.operatorImage,
		Args: []string{"basebackup", "--host", pgspec.InstanceHost(source, pg.Name, pg.Namespace, opts.clusterDomain),
			"--label", rn.name, "--dir", pgspec.BaseBackupDir},
		Env: []corev1.EnvVar{
			{Name: pgspec.EnvPGBinDir, Value: pgspec.BinDir},
			pgspec.SecretEnv(pgspec.EnvPassword, pgspec.BackupSecret(pg.Name), corev1.BasicAuthPasswordKey),
		},
		Retries:  baseBackupRetries,
		CASecret: pgspec.ServerSecret(pg.Name),
	}.Spec()
	job := jobFromTemplate(bj, &v1alpha1.BackupJobTemplate{Spec: spec}, rn.name, runLabels(bj.Name, rn.name),
		[]corev1.Volume{claimVolume(backupVolume, rn.name, false)},
		[]corev1.VolumeMount{{Name: backupVolume, MountPath: pgspec.BackupDir}})
	job.Annotations = mergeMaps(job.Annotations, runAnnotations(rn))
	return job
}

// baseBackupStart is what the successful base backup b records of itself,
// read from its Job's pod: the termination message of `instance
// basebackup` or `instance basebackup-to-store` (the WAL position and
// timeline where the backup starts, where it ends, and the size of a
// backup in the store). It is nil for other runs, and when the pod or its
// message is gone: the backup is whole all the same, its start is then
// not on record.
func (r *Reconciler) baseBackupStart(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) map[string]string {
	if bj.Spec.Source.PostgresCluster == "" {
		return nil
	}
	tool := pgspec.ToolBaseBackup
	if b.kind == v1alpha1.ObjectStoreBackup {
		tool = pgspec.ToolStoreBackup
	}
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bj.Namespace, Name: b.name}, job); err != nil {
		ctrl.LoggerFrom(ctx).Info("The start and end of a base backup are not recorded: its Job is not found", "run", b.name, "error", err.Error())
		return nil
	}
	terminated, err := r.terminatedContainers(ctx, job, string(tool), corev1.PodSucceeded)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("The start and end of a base backup are not recorded", "run", b.name, "error", err.Error())
		return nil
	}
	for _, t := range terminated {
		if start := pgbackup.ParseBaseBackupResult(t); start != nil {
			return start
		}
	}
	return nil
}

// terminatedContainers are the terminated states of container in the pods
// of job, those that ended in phase only. A pod counts only when job
// controls it (its owner reference, with the Job's UID): the Job's name
// label is anyone's to put on a pod of theirs, with a result of their
// choosing.
func (r *Reconciler) terminatedContainers(ctx context.Context, job *batchv1.Job, container string, phase corev1.PodPhase) ([]*corev1.ContainerStateTerminated, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, fmt.Errorf("list the pods of Job %s: %w", job.Name, err)
	}
	var out []*corev1.ContainerStateTerminated
	for i := range pods.Items {
		p := &pods.Items[i]
		if owner := metav1.GetControllerOf(p); owner == nil || owner.UID != job.UID || p.Status.Phase != phase {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == container && c.State.Terminated != nil {
				out = append(out, c.State.Terminated)
			}
		}
	}
	return out, nil
}
