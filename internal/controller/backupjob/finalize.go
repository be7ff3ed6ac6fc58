package backupjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// deletionPollInterval is how often a BackupJob being deleted with
// deletionPolicy Delete looks again at backups that are still going.
const deletionPollInterval = 5 * time.Second

// Finalizer is the BackupJob's: see NeedsFinalizer.
func (r *Reconciler) Finalizer() string { return Finalizer }

// NeedsFinalizer is true while bj's deletionPolicy is Delete, or its
// source is a PostgresCluster: a run of it may hold a fence on the
// cluster, which nothing but the operator removes; and, once its source is
// no longer one, for as long as a fence of one of its runs is still there
// (a cold-snapshot run keeps its fence until its snapshot is ready, source
// changed or not). Otherwise deleting it needs nothing of the operator —
// its Jobs go with it through their owner references and its backups,
// which have none, stay.
func (r *Reconciler) NeedsFinalizer(bj *v1alpha1.BackupJob) bool {
	if bj.Spec.DeletionPolicy == v1alpha1.DeleteBackups || bj.Spec.Source.PostgresCluster != "" {
		return true
	}
	if !controllerutil.ContainsFinalizer(bj, Finalizer) {
		// The finalizer is on before a run can fence (the loop adds it
		// before Sync): without it, no run of bj holds a fence.
		return false
	}
	// Read from the API server, not the cache, which may not show yet the
	// fence a reconcile set a moment ago. Only while the finalizer is on
	// and the spec no longer needs it.
	ctx, cancel := context.WithTimeout(context.Background(), fenceLookupTimeout)
	defer cancel()
	held, err := r.holdsFence(ctx, bj)
	// A fence that could not be looked for may be there: the finalizer
	// stays, and the next reconcile looks again.
	return held || err != nil
}

// fenceLookupTimeout bounds NeedsFinalizer's read of the PostgresClusters.
const fenceLookupTimeout = 10 * time.Second

// holdsFence tells whether a run of bj holds a fence on a PostgresCluster
// of its namespace, as the API server has them now.
func (r *Reconciler) holdsFence(ctx context.Context, bj *v1alpha1.BackupJob) (bool, error) {
	if !r.PostgresClustersServed {
		return false, nil
	}
	list := &v1alpha1.PostgresClusterList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(bj.Namespace)); err != nil {
		return false, fmt.Errorf("list the PostgresClusters of namespace %s: %w", bj.Namespace, err)
	}
	for i := range list.Items {
		if fenceOf(bj.Name, &list.Items[i]) != nil {
			return true, nil
		}
	}
	return false, nil
}

// Finalize runs when a BackupJob with the operator's finalizer is being
// deleted. With deletionPolicy Delete it deletes every backup that is not
// pinned and waits for them to go, at most DeletionGracePeriod (a backup
// someone else's finalizer holds must not keep the BackupJob for ever);
// then it releases the BackupJob. Pinned backups stay, labelled. First, it
// removes every fence a run of the BackupJob holds on a PostgresCluster.
func (r *Reconciler) Finalize(ctx context.Context, bj *v1alpha1.BackupJob) (kit.Outcome[v1alpha1.BackupJobStatus], bool) {
	for _, m := range r.methods() {
		if err := m.release(ctx, bj); err != nil {
			return kit.Outcome[v1alpha1.BackupJobStatus]{Err: err}, false
		}
	}
	if bj.Spec.DeletionPolicy == v1alpha1.DeleteBackups {
		obs, err := r.observe(ctx, bj, r.Clock.Now())
		if err != nil {
			return kit.Outcome[v1alpha1.BackupJobStatus]{Err: err}, false
		}
		var going []string
		for _, b := range obs.backups {
			// An object-store backup's record stays with its backup, which
			// the operator does not delete from the store yet (see
			// storebackup.go): deleting the record alone would hide it.
			if b.pinned || b.kind == v1alpha1.ObjectStoreBackup {
				continue
			}
			if !b.deleting() {
				// Guarded like retention's deletes: a backup changed since
				// the cache saw it (pinned a moment ago) is looked at again.
				uid, version := b.object.GetUID(), b.object.GetResourceVersion()
				err := r.Client.Delete(ctx, b.object, client.Preconditions{UID: &uid, ResourceVersion: &version})
				switch {
				case apierrors.IsNotFound(err):
					continue
				case apierrors.IsConflict(err):
					going = append(going, fmt.Sprintf("%s (changed since it was read)", b.name))
					continue
				case err != nil:
					// Refused (an admission policy, a permission): tried
					// again until the grace period ends, and reported.
					r.Recorder.Eventf(bj, nil, corev1.EventTypeWarning, "BackupDeletionFailed", "Delete",
						"Backup %s could not be deleted with BackupJob %s (deletionPolicy Delete): %v", b.name, bj.Name, err)
					going = append(going, fmt.Sprintf("%s (deletion refused: %v)", b.name, err))
					continue
				}
				r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "BackupDeleted", "Delete",
					"Backup %s deleted with BackupJob %s (deletionPolicy Delete)", b.name, bj.Name)
			}
			going = append(going, describeBlocked(b.object))
		}
		deadline := bj.DeletionTimestamp.Add(r.DeletionGracePeriod)
		if now := r.Clock.Now(); len(going) > 0 && now.Before(deadline) {
			return kit.Outcome[v1alpha1.BackupJobStatus]{After: min(deletionPollInterval, deadline.Sub(now))}, false
		}
		if len(going) > 0 {
			r.Recorder.Eventf(bj, nil, corev1.EventTypeWarning, "BackupsStillDeleting", "Delete",
				"BackupJob %s goes away while backups are still being deleted after %s: %s", bj.Name, r.DeletionGracePeriod, strings.Join(going, ", "))
		}
	}
	return kit.Outcome[v1alpha1.BackupJobStatus]{}, true
}
