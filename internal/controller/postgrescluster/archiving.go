package postgrescluster

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// Continuous archiving is the primary's instance manager's work (its
// archive_command uploads each WAL file); the operator only tells the
// cluster's status what the primary reports of it.

// archivingStatus is status.archiving: the primary's report, else the
// last one known (a failover does not forget where the archive stood);
// nil without spec.backup.
func archivingStatus(pg *v1alpha1.PostgresCluster, obs *observation, e election) *v1alpha1.PostgresArchivingStatus {
	if pg.Spec.Backup == nil {
		return nil
	}
	for _, m := range obs.members {
		if m.name == e.primary && m.report != nil && m.report.Archiving != nil {
			return m.report.Archiving.DeepCopy()
		}
	}
	return pg.Status.Archiving.DeepCopy()
}

// archivingCondition is ContinuousArchiving; false (none) without
// spec.backup.
func archivingCondition(pg *v1alpha1.PostgresCluster, a *v1alpha1.PostgresArchivingStatus, primary string) (metav1.Condition, bool) {
	if pg.Spec.Backup == nil {
		return metav1.Condition{}, false
	}
	set := func(status metav1.ConditionStatus, reason, message string) (metav1.Condition, bool) {
		return metav1.Condition{Type: v1alpha1.PostgresContinuousArchivingCondition, Status: status, Reason: reason, Message: kit.TruncateMessage(message)}, true
	}
	store := pg.Spec.Backup.ObjectStore
	switch {
	case primary == "":
		return set(metav1.ConditionFalse, v1alpha1.PostgresNoPrimaryReason, "No primary runs to archive WAL")
	case a == nil:
		return set(metav1.ConditionFalse, v1alpha1.PostgresArchiveStartingReason, fmt.Sprintf("Primary %s has not reported its archiving yet", primary))
	case failedSinceArchived(a):
		return set(metav1.ConditionFalse, v1alpha1.PostgresArchiveFailingReason,
			fmt.Sprintf("WAL file %s could not be archived to bucket %s at %s (last try %s): %s; %d WAL files wait on the primary's volume, which writes go on filling, and are archived once the store takes them",
				a.LastFailedWAL, store.Bucket, store.Endpoint, stamp(a.LastFailedAt), orUnknown(a.LastFailure), a.PendingWAL))
	case a.LastArchivedWAL == "":
		return set(metav1.ConditionFalse, v1alpha1.PostgresArchiveStartingReason, fmt.Sprintf("Primary %s has archived no WAL file yet", primary))
	}
	return set(metav1.ConditionTrue, v1alpha1.PostgresArchivingReason,
		fmt.Sprintf("WAL archived to bucket %s up to %s at %s; %d WAL files wait", store.Bucket, a.LastArchivedWAL, stamp(a.LastArchivedAt), a.PendingWAL))
}

// failedSinceArchived tells whether the archiver's last try failed: a
// failure after the last success.
func failedSinceArchived(a *v1alpha1.PostgresArchivingStatus) bool {
	if a.LastFailedAt == nil {
		return a.LastFailure != ""
	}
	return a.LastArchivedAt == nil || a.LastFailedAt.After(a.LastArchivedAt.Time)
}

func stamp(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

func orUnknown(s string) string {
	if s == "" {
		return "the instance did not say why"
	}
	return s
}
