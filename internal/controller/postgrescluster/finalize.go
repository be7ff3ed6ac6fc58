package postgrescluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
)

// deletionConfirmed tells whether deleting pg may delete its claims:
// deletionPolicy Delete and the confirmation annotation set to pg's own
// name, so that neither a default nor an annotation copied from another
// cluster deletes data.
func deletionConfirmed(pg *v1alpha1.PostgresCluster) bool {
	return pg.Spec.DeletionPolicy == v1alpha1.DeleteClaims && pg.Annotations[v1alpha1.PostgresConfirmDeleteAnnotation] == pg.Name
}

// Finalize runs when a PostgresCluster with deletionPolicy Delete is
// deleted. Confirmed, it deletes the pods, then its claims, not those an
// earlier cluster of the name kept and it never adopted (a claim in use
// goes once its pod is gone, which the API server waits for); unconfirmed,
// it keeps the claims and says so. Then the cluster goes.
func (r *Reconciler) Finalize(ctx context.Context, pg *v1alpha1.PostgresCluster) (kit.Outcome[v1alpha1.PostgresClusterStatus], bool) {
	if !deletionConfirmed(pg) {
		r.Recorder.Eventf(pg, nil, corev1.EventTypeWarning, "DeletionNotConfirmed", "Delete",
			"deletionPolicy is Delete but the annotation %s=%s is missing: the claims are kept", v1alpha1.PostgresConfirmDeleteAnnotation, pg.Name)
		return kit.Outcome[v1alpha1.PostgresClusterStatus]{}, true
	}
	for _, list := range []client.ObjectList{&corev1.PodList{}, &corev1.PersistentVolumeClaimList{}} {
		if err := r.Client.List(ctx, list, client.InNamespace(pg.Namespace), client.MatchingLabelsSelector{Selector: objectsOf(pg.Name)}); err != nil {
			return kit.Outcome[v1alpha1.PostgresClusterStatus]{Err: fmt.Errorf("list the objects of PostgresCluster %s: %w", pg.Name, err)}, false
		}
		var objs []client.Object
		switch l := list.(type) {
		case *corev1.PodList:
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		case *corev1.PersistentVolumeClaimList:
			for i := range l.Items {
				// An earlier cluster's claim, never adopted, is not this
				// one's to delete.
				if !keptFromEarlier(&l.Items[i], pg) {
					objs = append(objs, &l.Items[i])
				}
			}
		}
		for _, obj := range objs {
			if !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			uid := obj.GetUID()
			if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return kit.Outcome[v1alpha1.PostgresClusterStatus]{Err: fmt.Errorf("delete %s of PostgresCluster %s: %w", obj.GetName(), pg.Name, err)}, false
			}
			kindName := "Pod"
			if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				kindName = "PersistentVolumeClaim"
				r.Recorder.Eventf(pg, obj, corev1.EventTypeNormal, "ClaimDeleted", "Delete",
					"PersistentVolumeClaim %s deleted with PostgresCluster %s (deletionPolicy Delete, confirmed)", obj.GetName(), pg.Name)
			}
			children.CountWrite(kind, kindName, "delete")
		}
	}
	return kit.Outcome[v1alpha1.PostgresClusterStatus]{}, true
}
