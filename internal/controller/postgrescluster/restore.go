package postgrescluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// snapshotList is the list kind of VolumeSnapshots, read unstructured: the
// API is optional, and a restore reads it once.
var snapshotList = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotList"}

// backupCandidate is a backup a cluster may be restored from.
type backupCandidate struct {
	name    string
	kind    string // VolumeSnapshot or PersistentVolumeClaim
	created int64
	// cluster is the PostgresCluster the backup is of (the annotation
	// v1alpha1.BackupSourceClusterAnnotation), "" for a backup of a plain
	// claim, which holds no PostgreSQL data directory.
	cluster string
}

// restoreSource is the data source of the first instance's claim of a
// cluster restored from a backup: the backup spec.bootstrap.fromBackup
// names, else its BackupJob's newest successful one; only a backup of a
// PostgresCluster. It reads the backups from the API server: the cache
// holds neither the snapshots nor the backups of other kinds' objects. A
// cluster that does not serve VolumeSnapshots has none; any other error
// reading them is returned, not taken for "none": the newest backup may be
// a snapshot, and an older claim must not be restored in its place.
func (r *Reconciler) restoreSource(ctx context.Context, pg *v1alpha1.PostgresCluster) (*corev1.TypedObjectReference, error) {
	from := pg.Spec.Bootstrap.FromBackup
	selector := client.MatchingLabels{v1alpha1.BackupJobLabel: from.BackupJob, v1alpha1.BackupResultLabel: string(v1alpha1.BackupSucceeded)}
	var candidates []backupCandidate
	snapshots := &unstructured.UnstructuredList{}
	snapshots.SetGroupVersionKind(snapshotList)
	switch err := r.APIReader.List(ctx, snapshots, client.InNamespace(pg.Namespace), selector); {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		// VolumeSnapshots are not served: no backup is one.
	case err != nil:
		return nil, fmt.Errorf("list the VolumeSnapshots of BackupJob %s: %w", from.BackupJob, err)
	default:
		for _, s := range snapshots.Items {
			candidates = append(candidates, backupCandidate{name: s.GetName(), kind: "VolumeSnapshot", created: s.GetCreationTimestamp().Unix(),
				cluster: s.GetAnnotations()[v1alpha1.BackupSourceClusterAnnotation]})
		}
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, claims, client.InNamespace(pg.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the backups of BackupJob %s: %w", from.BackupJob, err)
	}
	for _, c := range claims.Items {
		candidates = append(candidates, backupCandidate{name: c.Name, kind: "PersistentVolumeClaim", created: c.CreationTimestamp.Unix(),
			cluster: c.Annotations[v1alpha1.BackupSourceClusterAnnotation]})
	}
	chosen, err := chooseBackup(candidates, from)
	if err != nil {
		return nil, err
	}
	ref := &corev1.TypedObjectReference{Kind: chosen.kind, Name: chosen.name}
	if chosen.kind == "VolumeSnapshot" {
		ref.APIGroup = ptr.To("snapshot.storage.k8s.io")
	}
	return ref, nil
}

// chooseBackup is the backup named, or the newest, of those of a
// PostgresCluster; an error says why there is none.
func chooseBackup(candidates []backupCandidate, from *v1alpha1.PostgresFromBackup) (backupCandidate, error) {
	var chosen *backupCandidate
	var names, plain []string
	for i := range candidates {
		c := &candidates[i]
		if c.cluster == "" {
			// A copy of a plain volume: nothing PostgreSQL can start
			// from.
			plain = append(plain, c.name)
			continue
		}
		names = append(names, c.name)
		switch {
		case from.Name != "":
			if c.name == from.Name {
				chosen = c
			}
		case chosen == nil || c.created > chosen.created || (c.created == chosen.created && c.name > chosen.name):
			chosen = c
		}
	}
	switch {
	case chosen != nil:
		return *chosen, nil
	case from.Name != "" && slices.Contains(plain, from.Name):
		return backupCandidate{}, noBackup("spec.bootstrap.fromBackup names backup %s of BackupJob %s, which is not a backup of a PostgresCluster (it has no %s annotation): it holds no PostgreSQL data directory",
			from.Name, from.BackupJob, v1alpha1.BackupSourceClusterAnnotation)
	case from.Name != "":
		return backupCandidate{}, noBackup("BackupJob %s has no successful backup named %s (it has: %s)", from.BackupJob, from.Name, strings.Join(names, ", "))
	case len(plain) > 0:
		return backupCandidate{}, noBackup("spec.bootstrap.fromBackup.backupJob: BackupJob %s is not a backup of a PostgresCluster: its backups have no %s annotation (its source is a claim) and hold no PostgreSQL data directory",
			from.BackupJob, v1alpha1.BackupSourceClusterAnnotation)
	}
	return backupCandidate{}, noBackup("BackupJob %s has no successful backup yet", from.BackupJob)
}

// noBackupError says why a restore has no backup to start from: the spec
// or the backups are the cause, not a failed read, which is retried.
type noBackupError struct{ message string }

func (e noBackupError) Error() string { return e.message }

func noBackup(format string, args ...any) error {
	return noBackupError{message: fmt.Sprintf(format, args...)}
}
