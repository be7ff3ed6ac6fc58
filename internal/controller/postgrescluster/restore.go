package postgrescluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
}

// restoreSource is the data source of the first instance's claim of a
// cluster restored from a backup: the backup spec.bootstrap.fromBackup
// names, else its BackupJob's newest successful one. It reads the backups
// from the API server: the cache holds neither the snapshots nor the
// backups of other kinds' objects.
func (r *Reconciler) restoreSource(ctx context.Context, pg *v1alpha1.PostgresCluster) (*corev1.TypedObjectReference, error) {
	from := pg.Spec.Bootstrap.FromBackup
	selector := client.MatchingLabels{v1alpha1.BackupJobLabel: from.BackupJob, v1alpha1.BackupResultLabel: "Succeeded"}
	var candidates []backupCandidate
	snapshots := &unstructured.UnstructuredList{}
	snapshots.SetGroupVersionKind(snapshotList)
	if err := r.APIReader.List(ctx, snapshots, client.InNamespace(pg.Namespace), selector); err == nil {
		for _, s := range snapshots.Items {
			candidates = append(candidates, backupCandidate{name: s.GetName(), kind: "VolumeSnapshot", created: s.GetCreationTimestamp().Unix()})
		}
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, claims, client.InNamespace(pg.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the backups of BackupJob %s: %w", from.BackupJob, err)
	}
	for _, c := range claims.Items {
		candidates = append(candidates, backupCandidate{name: c.Name, kind: "PersistentVolumeClaim", created: c.CreationTimestamp.Unix()})
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

// chooseBackup is the backup named, or the newest; an error says why there
// is none.
func chooseBackup(candidates []backupCandidate, from *v1alpha1.PostgresFromBackup) (backupCandidate, error) {
	var chosen *backupCandidate
	var names []string
	for i := range candidates {
		c := &candidates[i]
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
	case from.Name != "":
		return backupCandidate{}, fmt.Errorf("BackupJob %s has no successful backup named %s (it has: %s)", from.BackupJob, from.Name, strings.Join(names, ", "))
	}
	return backupCandidate{}, fmt.Errorf("BackupJob %s has no successful backup yet", from.BackupJob)
}
