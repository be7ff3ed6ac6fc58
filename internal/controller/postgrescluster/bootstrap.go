package postgrescluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// The first data of a cluster comes from its bootstrap (pgspec.BootstrapOf):
// initdb in the first instance, or a volume backup cloned into the first
// instance's claim; next, an object store's backup with a recovery target.
// This is the operator's side of that one decision, the instance
// manager's decide the other: a new way to bootstrap is a case here and
// one there.

// bootstrapClaim sets, on the new claim of instance n, where its data
// comes from; false when the claim must wait, with why in out. Only the
// first instance of a cluster that never had a primary bootstraps: the
// others clone it once it runs.
func (r *Reconciler) bootstrapClaim(ctx context.Context, pg *v1alpha1.PostgresCluster, n int, claim *corev1.PersistentVolumeClaim, out *outcome) bool {
	if n != 1 || pg.Status.CurrentPrimary != "" {
		return true
	}
	switch pgspec.BootstrapOf(pg) {
	case pgspec.BootstrapVolumeBackup:
		source, err := r.restoreSource(ctx, pg)
		if errors.As(err, &noBackupError{}) {
			out.Report(v1alpha1.PostgresBackupNotFoundReason, err.Error())
			return false
		}
		if err != nil {
			out.Add(fmt.Errorf("choose the backup to restore: %w", err), false)
			out.Report(v1alpha1.PostgresApplyFailedReason, err.Error())
			return false
		}
		claim.Spec.DataSourceRef = source
	}
	// initdb: an empty claim, which the instance manager initializes.
	return true
}
