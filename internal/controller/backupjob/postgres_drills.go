package backupjob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// A restore drill of a PostgresCluster's backup (spec.verify.sql) touches
// the data, level by level from what the objects show:
//
//  1. due: a temporary single-instance PostgresCluster, drill-HASH, owned by
//     the BackupJob, is restored from the backup (bootstrap.fromBackup
//     naming it), with deletionPolicy Delete and its confirmation, so that
//     its claims go with it. A backup in the object store is restored from
//     the source cluster's store (its spec.backup.objectStore, the path
//     made explicit) by the backup's name there, and PostgreSQL replays
//     the WAL archived after it up to the archive's end before it opens:
//     the drill checks the base backup and the archive that follows it;
//  2. once it is Healthy, a Job runs `instance verify`: the query, in its
//     application database as its owner (from its generated Secret);
//  3. the Job's result, with the database's message when it failed, is
//     recorded on the backup, then the Job and the temporary cluster are
//     deleted.
//
// A temporary cluster that is not Healthy within drillClusterTimeout fails
// the drill, with its Ready condition's message.

const (
	// drillClusterTimeout bounds how long a drill waits for the cluster
	// restored from the backup: a restore that does not start is the
	// drill's answer.
	drillClusterTimeout = 10 * time.Minute
)

// drillClusterName is the name of the temporary PostgresCluster of the
// drill of backup b: short and fixed, as a cluster's name bounds its pods'.
func drillClusterName(bj *v1alpha1.BackupJob, b *backup) string {
	sum := sha256.Sum256([]byte(string(bj.UID) + "/" + b.name))
	return "drill-" + hex.EncodeToString(sum[:5])
}

// desiredDrillCluster is the temporary PostgresCluster restored from
// backup b, of the source's image when it still exists.
func desiredDrillCluster(bj *v1alpha1.BackupJob, b *backup, source *v1alpha1.PostgresCluster) *v1alpha1.PostgresCluster {
	name := drillClusterName(bj, b)
	pg := &v1alpha1.PostgresCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PostgresCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: bj.Namespace, Labels: drillLabels(bj.Name, b.name),
			Annotations:     map[string]string{v1alpha1.PostgresConfirmDeleteAnnotation: name},
			OwnerReferences: []metav1.OwnerReference{ownerReference(bj)},
		},
		Spec: v1alpha1.PostgresClusterSpec{
			Instances:      1,
			Storage:        v1alpha1.PostgresStorage{Size: b.restoreSize(), StorageClassName: b.storageClass},
			DeletionPolicy: v1alpha1.DeleteClaims,
			Bootstrap:      &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: bj.Name, Name: b.name}},
		},
	}
	if b.kind == v1alpha1.ObjectStoreBackup && source != nil && source.Spec.Backup != nil {
		store := source.Spec.Backup.ObjectStore.DeepCopy()
		store.Path = pgspec.StorePath(store, source.Namespace, source.Name)
		pg.Spec.Bootstrap.FromBackup = &v1alpha1.PostgresFromBackup{ObjectStore: store, Name: b.name}
		if bj.Spec.Verify != nil && bj.Spec.Verify.RecoveryTarget == v1alpha1.DrillToBackupEnd {
			point, _ := drillPointInTime(b)
			pg.Spec.Bootstrap.FromBackup.TargetTime = point
		}
	}
	if source != nil {
		pg.Spec.Image = source.Spec.Image
		// The drill's CLUSTER-app Secret names the owner and database the
		// backup holds, as which the verify query runs.
		from := pg.Spec.Bootstrap.FromBackup
		from.Owner, from.Database = source.Spec.Bootstrap.ApplicationOwner()
		if pg.Spec.Storage.Size.Cmp(source.Spec.Storage.Size) < 0 {
			pg.Spec.Storage.Size = source.Spec.Storage.Size
		}
		if pg.Spec.Storage.StorageClassName == nil {
			pg.Spec.Storage.StorageClassName = source.Spec.Storage.StorageClassName
		}
	}
	return pg
}

// desiredVerifyJob is the Job of a PostgreSQL drill: the verify query in
// the temporary cluster's only instance, through its stable name, as its
// application's owner.
func desiredVerifyJob(bj *v1alpha1.BackupJob, b *backup, drill *v1alpha1.PostgresCluster, opts baseBackupOptions) *batchv1.Job {
	host := pgspec.InstanceHost(pgspec.InstanceName(drill.Name, 1), drill.Name, drill.Namespace, opts.clusterDomain)
	app := pgspec.GeneratedAppSecret(drill.Name)
	spec := pgspec.ToolJob{
		Tool:          pgspec.ToolVerify,
		Image:         drill.Spec.Image,
		OperatorImage: opts.operatorImage,
		Args:          []string{"verify", "--host", host},
		Env: []corev1.EnvVar{
			pgspec.SecretEnv(pgspec.EnvUser, app, corev1.BasicAuthUsernameKey),
			pgspec.SecretEnv(pgspec.EnvDatabase, app, "dbname"),
			pgspec.SecretEnv(pgspec.EnvPassword, app, corev1.BasicAuthPasswordKey),
			{Name: pgspec.EnvVerifySQL, Value: bj.Spec.Verify.SQL},
		},
		// One attempt: a query that fails once is the drill's answer.
		Retries:  0,
		CASecret: pgspec.ServerSecret(drill.Name),
	}.Spec()
	return jobFromTemplate(bj, &v1alpha1.BackupJobTemplate{Spec: spec}, DrillName(bj.Name, b.scheduled), drillLabels(bj.Name, b.name), nil, nil)
}

// storeDrillProblem is why the drill of object-store backup b cannot
// start, nil when it can: it reads the store through the source cluster's
// spec.backup.objectStore (its keys are in the cluster's Secret), which
// must still exist and name the folder the backup was written to.
func storeDrillProblem(b *backup, source *v1alpha1.PostgresCluster) *cause {
	if b.kind != v1alpha1.ObjectStoreBackup {
		return nil
	}
	if source == nil || source.Spec.Backup == nil {
		return &cause{Reason: v1alpha1.BackupJobObjectStoreMissingReason,
			Message: fmt.Sprintf("the restore drill of backup %s waits: it reads the object store through the source PostgresCluster's spec.backup.objectStore, and the cluster or its spec.backup is gone", b.name)}
	}
	folder := storeFolder(&source.Spec.Backup.ObjectStore, source.Namespace, source.Name)
	if recorded := b.object.GetAnnotations()[v1alpha1.BackupObjectStoreAnnotation]; recorded != "" && recorded != folder {
		return &cause{Reason: v1alpha1.BackupJobObjectStoreMissingReason,
			Message: fmt.Sprintf("the restore drill of backup %s waits: the backup was written to %s, and PostgresCluster %s's spec.backup.objectStore now names %s", b.name, recorded, source.Name, folder)}
	}
	return nil
}

// drillPointInTime is the point in time just after object-store backup b
// ended that its run marked (v1alpha1.BackupPointInTimeAnnotation), which
// a drill with recoveryTarget BackupEnd recovers to; else why there is
// none.
func drillPointInTime(b *backup) (*metav1.Time, string) {
	recorded := b.object.GetAnnotations()[v1alpha1.BackupPointInTimeAnnotation]
	if recorded == "" {
		return nil, fmt.Sprintf("its record has no %s annotation: its run could not commit the mark after the backup's end that a recovery to that time stops at", v1alpha1.BackupPointInTimeAnnotation)
	}
	point, err := time.Parse(time.RFC3339, recorded)
	if err != nil {
		return nil, fmt.Sprintf("its %s annotation %q is not an RFC 3339 time", v1alpha1.BackupPointInTimeAnnotation, recorded)
	}
	return &metav1.Time{Time: point}, ""
}

// startPostgresDrill restores backup b into a temporary cluster.
func (r *Reconciler) startPostgresDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, out *outcome) {
	if c := storeDrillProblem(b, obs.postgres.cluster); c != nil {
		out.Report(c.Reason, c.Message)
		return
	}
	if b.kind == v1alpha1.ObjectStoreBackup && bj.Spec.Verify.RecoveryTarget == v1alpha1.DrillToBackupEnd {
		if _, why := drillPointInTime(b); why != "" {
			r.finishDrill(ctx, bj, obs, b, false, fmt.Sprintf("Restore drill of backup %s at its end failed: %s", b.name, why), out)
			return
		}
	}
	drill := &v1alpha1.PostgresCluster{}
	res := r.Children.Ensure(ctx, bj, children.Typed(desiredDrillCluster(bj, b, obs.postgres.cluster)), drill, children.WithoutCreateEvent())
	if r.judgeCreate(res, out) != runStarted {
		return
	}
	obs.postgres.drillClusters[b.name] = drill
	b.verified = v1alpha1.VerificationRunning
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "DrillStarted", "Verify",
		"Restore drill of backup %s started: PostgresCluster %s restored from it, then checked by the verify query", b.name, drill.Name)
}

// advancePostgresDrill moves the drill of backup b, whose temporary
// cluster is drill and has no Job yet, one step on: the Job once the
// cluster is Healthy, a failure once it has waited too long.
func (r *Reconciler) advancePostgresDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, drill *v1alpha1.PostgresCluster, now time.Time, out *outcome) {
	b.verified = v1alpha1.VerificationRunning
	// Healthy is not enough: a cluster restored from a backup holds the
	// source's passwords until its primary sets the drill's own, which
	// status.credentials.appliedVersion says it did; the verify Job logs in
	// with the drill's.
	if drill.Status.Phase == v1alpha1.PostgresHealthy && drill.Status.CurrentPrimary != "" && drill.Status.Credentials.AppliedVersion != "" {
		job := &batchv1.Job{}
		res := r.Children.Ensure(ctx, bj, children.Typed(desiredVerifyJob(bj, b, drill, r.baseBackup)), job, children.WithoutCreateEvent())
		if r.judgeCreate(res, out) == runStarted {
			obs.drillJobs[b.name] = job
		}
		return
	}
	if now.Before(drill.CreationTimestamp.Add(drillClusterTimeout)) {
		return
	}
	why := "it reports no condition"
	if c := meta.FindStatusCondition(drill.Status.Conditions, v1alpha1.PostgresReadyCondition); c != nil {
		why = c.Message
	}
	message := fmt.Sprintf("Restore drill of backup %s failed: PostgresCluster %s restored from it was not Healthy within %s: %s", b.name, drill.Name, drillClusterTimeout, why)
	r.finishDrill(ctx, bj, obs, b, false, message, out)
}

// verifyMessage is what the failed verify Job of a PostgreSQL drill said:
// the termination message of its container (the database's message, or
// that the query did not return true), else the Job's own.
func (r *Reconciler) verifyMessage(ctx context.Context, job *batchv1.Job, fallback string) string {
	terminated, err := r.terminatedContainers(ctx, job, string(pgspec.ToolVerify), corev1.PodFailed)
	if err != nil || len(terminated) == 0 || terminated[0].Message == "" {
		return fallback
	}
	return terminated[0].Message
}

// removeDrillCluster deletes the temporary cluster of a drill, with its
// claims (its deletionPolicy), when the BackupJob controls it.
func (r *Reconciler) removeDrillCluster(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, name string) error {
	drill := obs.postgres.drillClusters[name]
	if drill == nil {
		return nil
	}
	if isControlledBy(drill, bj) && drill.DeletionTimestamp == nil {
		uid := drill.UID
		if err := r.Client.Delete(ctx, drill, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete the restore drill's PostgresCluster %s: %w", drill.Name, err)
		}
	}
	delete(obs.postgres.drillClusters, name)
	return nil
}

// drillDeadline is when the soonest temporary cluster still starting fails
// its drill, zero for none: a cluster that never turns Healthy may never
// change either.
func drillDeadline(obs *observation) time.Time {
	var soonest time.Time
	for name, drill := range obs.postgres.drillClusters {
		if obs.drillJobs[name] != nil || drill.DeletionTimestamp != nil {
			continue
		}
		if d := drill.CreationTimestamp.Add(drillClusterTimeout); soonest.IsZero() || d.Before(soonest) {
			soonest = d
		}
	}
	return soonest
}
