package backupjob

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup"
)

// backupMethod is what the BackupJob controller asks of a way of making
// backups beyond its own copy of a claim and snapshot of a claim: the
// controller keeps the schedule, concurrency, results, retention and
// drills' bookkeeping; a method observes what its runs use, starts a run,
// makes a started run's Job, moves its runs on, says what a succeeded
// backup records of itself, runs its restore drills and lets go of what its
// runs hold when the BackupJob goes.
//
//	Sync ─▶ observe (every method) ─▶ record results (result)
//	     ─▶ advance (every method) ─▶ schedule: start (the source's method)
//	     ─▶ drills: startDrill (the source's), advanceDrills (every method)
//	Finalize ─▶ release (every method)
//
// The PostgreSQL methods (postgres.go: the cold snapshot of a fenced
// replica; basebackup.go and storebackup.go: base backups into a claim or
// the cluster's object store; postgres_drills.go: the SQL restore drill)
// are one implementation, postgresMethod.
type backupMethod interface {
	// observe reads into obs what the method's runs and drills use,
	// whatever spec.source names now: a run of an earlier source may still
	// hold something.
	observe(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation) error
	// start starts run rn of bj's source; its backup or hold is added to
	// obs.
	start(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, now time.Time, out *outcome) startOutcome
	// runJob is the Job of run rn, whose backup (claim or record) exists.
	runJob(bj *v1alpha1.BackupJob, obs *observation, rn run, out *outcome) (*batchv1.Job, startOutcome)
	// advance moves the method's runs in progress one step on.
	advance(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome)
	// result is what the succeeded backup b records of itself besides its
	// result, nil for nothing.
	result(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) map[string]string
	// startDrill starts the restore drill of backup b.
	startDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, out *outcome)
	// advanceDrills moves the method's drills that have no Job yet on, and
	// removes those whose backup is gone or verified.
	advanceDrills(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome)
	// release lets go of everything the BackupJob's runs hold: it is being
	// deleted.
	release(ctx context.Context, bj *v1alpha1.BackupJob) error
}

// methods are every method the reconciler knows, for what each one does
// whatever spec.source names.
func (r *Reconciler) methods() []backupMethod { return []backupMethod{postgresMethod{r}} }

// methodOf is the method of bj's source, nil for a claim, which the
// controller copies or snapshots itself.
func (r *Reconciler) methodOf(bj *v1alpha1.BackupJob) backupMethod {
	if bj.Spec.Source.PostgresCluster != "" {
		return postgresMethod{r}
	}
	return nil
}

// postgresMethod makes the backups of a PostgresCluster: a snapshot of a
// fenced replica's claim for a snapshot target, a base backup into a
// claim for a volume target, into the cluster's object store for an
// objectStore target; and checks them with an SQL restore drill.
type postgresMethod struct{ r *Reconciler }

func (m postgresMethod) observe(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation) error {
	return m.r.observePostgres(ctx, bj, obs)
}

func (m postgresMethod) start(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, now time.Time, out *outcome) startOutcome {
	switch {
	case snapshotTarget(bj) != nil:
		return m.r.startPostgresRun(ctx, bj, obs, rn, now, out)
	case objectStoreTarget(bj) != nil:
		return m.r.startStoreBackupRun(ctx, bj, obs, rn, out)
	}
	return m.r.startBaseBackupRun(ctx, bj, obs, rn, out)
}

func (m postgresMethod) runJob(bj *v1alpha1.BackupJob, obs *observation, rn run, out *outcome) (*batchv1.Job, startOutcome) {
	b := obs.backupNamed(rn.name)
	if obs.postgres.cluster == nil || b == nil {
		out.Add(fmt.Errorf("run %s: no PostgresCluster %s or no backup claim or record to make its Job for", rn.name, bj.Spec.Source.PostgresCluster), false)
		return nil, runFailed
	}
	source := b.object.GetAnnotations()[v1alpha1.BackupSourceInstanceAnnotation]
	if b.kind != v1alpha1.ObjectStoreBackup {
		return desiredBaseBackupJob(bj, rn, obs.postgres.cluster, source, m.r.baseBackup), runStarted
	}
	if problem := pgbackup.ObjectStoreProblem(obs.postgres.cluster); problem != nil {
		// spec.backup was removed since the run's record was made.
		out.Report(problem.Reason, problem.Message)
		return nil, runFailed
	}
	return desiredStoreBackupJob(bj, rn, obs.postgres.cluster, source, m.r.baseBackup), runStarted
}

func (m postgresMethod) advance(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) {
	m.r.advanceFences(ctx, bj, obs, now, out)
}

func (m postgresMethod) result(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) map[string]string {
	return m.r.baseBackupStart(ctx, bj, b)
}

func (m postgresMethod) startDrill(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, b *backup, out *outcome) {
	// The API server refuses this; a BackupJob stored before its rules
	// were is reported, not run.
	if bj.Spec.Verify.SQL == "" {
		out.Report(v1alpha1.BackupJobInvalidSpecReason, "spec.verify.sql is required to check a PostgresCluster's backups: no restore drill runs")
		return
	}
	m.r.startPostgresDrill(ctx, bj, obs, b, out)
}

func (m postgresMethod) advanceDrills(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, now time.Time, out *outcome) {
	for name, drill := range obs.postgres.drillClusters {
		if obs.drillJobs[name] == nil {
			if b := obs.backupNamed(name); b != nil && b.verified == "" && bj.Spec.Verify != nil && drill.DeletionTimestamp == nil {
				m.r.advancePostgresDrill(ctx, bj, obs, b, drill, now, out)
				continue
			}
			if err := m.r.removeDrill(ctx, bj, obs, name); err != nil {
				out.Add(err, false)
			}
		}
	}
}

func (m postgresMethod) release(ctx context.Context, bj *v1alpha1.BackupJob) error {
	return m.r.releaseAllFences(ctx, bj)
}

// methodResult is what the succeeded backup b records of itself besides its
// result: its method's say, nil for a claim's copy or snapshot.
func (r *Reconciler) methodResult(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) map[string]string {
	if m := r.methodOf(bj); m != nil {
		return m.result(ctx, bj, b)
	}
	return nil
}
