package pgspec

import (
	"slices"

	"example.com/platform-operator/api/v1alpha1"
)

// The fence annotations themselves are API (a person reads them with
// kubectl): v1alpha1.PostgresBackupFence*Annotation. What they mean for an
// instance is here, read alike by the operator and the instance manager.

// FencedOnPurpose tells whether instance is fenced on purpose: named by
// spec.fencedInstances, or by a BackupJob's run for a cold snapshot. Such
// an instance stops PostgreSQL and is not a failure.
func FencedOnPurpose(pg *v1alpha1.PostgresCluster, instance string) bool {
	return slices.Contains(pg.Spec.FencedInstances, instance) || FencedForBackup(pg, instance)
}

// FencedForBackup tells whether a BackupJob's run fences instance.
func FencedForBackup(pg *v1alpha1.PostgresCluster, instance string) bool {
	fence := pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation]
	return fence != "" && fence == instance
}

// BackupFenceRun is the BackupJob run that fences instance, "" for none:
// a report of a clean shutdown names it, so that an earlier run's report
// is not taken for this one's.
func BackupFenceRun(pg *v1alpha1.PostgresCluster, instance string) string {
	if !FencedForBackup(pg, instance) {
		return ""
	}
	return pg.Annotations[v1alpha1.PostgresBackupFenceByAnnotation]
}
