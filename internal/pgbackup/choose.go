package pgbackup

import (
	"fmt"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/pgspec"
)

// ChooseFence is the instance of pg that a due run fences, or why
// it waits: one that another run fences already (one fence at a time), or
// no instance ready to be fenced. It is the most caught-up ready replica
// (most WAL received, then replayed, then the lowest name), never the
// primary, nor an instance fenced or leaving; the primary only for a
// single-instance cluster whose BackupJob allows it (the caller refuses
// one that does not).
func ChooseFence(pg *v1alpha1.PostgresCluster, allowPrimary bool) (string, *kit.Cause) {
	a := pg.GetAnnotations()
	if holder := a[v1alpha1.PostgresBackupFenceAnnotation]; holder != "" {
		return "", &kit.Cause{Reason: v1alpha1.BackupJobFenceHeldReason,
			Message: fmt.Sprintf("Instance %s of PostgresCluster %s is fenced by the run %s: one run at a time fences a cluster; the run waits",
				holder, pg.Name, a[v1alpha1.PostgresBackupFenceByAnnotation])}
	}
	if pg.Spec.Instances <= 1 {
		for _, i := range pg.Status.Instances {
			if allowPrimary && i.Name == pg.Status.CurrentPrimary && i.Role == v1alpha1.PostgresPrimaryRole && i.Ready && !i.Fenced {
				return i.Name, nil
			}
		}
		return "", &kit.Cause{Reason: v1alpha1.BackupJobNoReadyReplicaReason,
			Message: fmt.Sprintf("The primary of PostgresCluster %s is not ready: the run waits", pg.Name)}
	}
	var candidates []v1alpha1.PostgresInstanceStatus
	for _, i := range pg.Status.Instances {
		if i.Role == v1alpha1.PostgresReplicaRole && i.Ready && !i.Fenced && i.Name != pg.Status.CurrentPrimary &&
			i.Name != pg.Status.TargetPrimary && pgspec.Wanted(pg, i.Name) {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return "", &kit.Cause{Reason: v1alpha1.BackupJobNoReadyReplicaReason,
			Message: fmt.Sprintf("No replica of PostgresCluster %s is ready to be fenced (its primary is never fenced): the run waits", pg.Name)}
	}
	return pgspec.MostCaughtUp(candidates), nil
}

// ChooseBaseBackupSource is the instance of pg that a base backup copies,
// or why the run waits: the most caught-up ready replica (as for a fence),
// else the ready primary, whose copy costs it reads, not writes.
func ChooseBaseBackupSource(pg *v1alpha1.PostgresCluster) (string, *kit.Cause) {
	var replicas []v1alpha1.PostgresInstanceStatus
	primary := ""
	for _, i := range pg.Status.Instances {
		switch {
		case !i.Ready || i.Fenced:
		case i.Name == pg.Status.CurrentPrimary && i.Role == v1alpha1.PostgresPrimaryRole:
			primary = i.Name
		case i.Role == v1alpha1.PostgresReplicaRole && i.Name != pg.Status.TargetPrimary && pgspec.Wanted(pg, i.Name):
			replicas = append(replicas, i)
		}
	}
	if best := pgspec.MostCaughtUp(replicas); best != "" {
		return best, nil
	}
	if primary != "" {
		return primary, nil
	}
	return "", &kit.Cause{Reason: v1alpha1.BackupJobNoReadyReplicaReason,
		Message: fmt.Sprintf("No instance of PostgresCluster %s is ready to stream a base backup from: the run waits", pg.Name)}
}

// ObjectStoreProblem is why no object-store run of pg can start: the
// cluster has no store to put backups in. nil when it has one.
func ObjectStoreProblem(pg *v1alpha1.PostgresCluster) *kit.Cause {
	if pg.Spec.Backup != nil {
		return nil
	}
	return &kit.Cause{Reason: v1alpha1.BackupJobObjectStoreMissingReason,
		Message: fmt.Sprintf("spec.target.objectStore puts base backups into the object store of PostgresCluster %s, which has none: "+
			"set its spec.backup.objectStore (where its WAL is archived too); runs are skipped and counted as missed until then", pg.Name)}
}

// ChooseStoreBackupSource is the instance of pg that an object-store base
// backup copies, or why the run waits: the ready primary, and only it
// (storebackup.go of the BackupJob controller says why); one being
// switched over from (targetPrimary elsewhere) is about to stop being it.
func ChooseStoreBackupSource(pg *v1alpha1.PostgresCluster) (string, *kit.Cause) {
	for _, i := range pg.Status.Instances {
		if i.Name == pg.Status.CurrentPrimary && i.Name == pg.Status.TargetPrimary && i.Role == v1alpha1.PostgresPrimaryRole && i.Ready && !i.Fenced {
			return i.Name, nil
		}
	}
	return "", &kit.Cause{Reason: v1alpha1.BackupJobNoReadyReplicaReason,
		Message: fmt.Sprintf("The primary of PostgresCluster %s is not ready, or a switchover is under way: a base backup into the object store copies the primary; the run waits", pg.Name)}
}
