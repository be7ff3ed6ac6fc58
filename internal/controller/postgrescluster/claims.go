package postgrescluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// ensureClaims makes each instance's claim, and grows those smaller than
// spec.storage.size; a claim is never shrunk, nor one taken that is not the
// cluster's. listed are the claims labelled as the cluster's (listClaims):
// one of an instance's name that is not among them is another's, which
// creating it finds.
func (r *Reconciler) ensureClaims(ctx context.Context, pg *v1alpha1.PostgresCluster, listed map[string]*corev1.PersistentVolumeClaim, out *outcome) map[string]*corev1.PersistentVolumeClaim {
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for n := 1; n <= int(pg.Spec.Instances); n++ {
		desired := DesiredClaim(pg, n)
		live := listed[desired.Name]
		switch {
		case live == nil:
			if pg.Spec.Hibernate {
				continue
			}
			if !r.bootstrapClaim(ctx, pg, n, desired, out) {
				continue
			}
			if err := r.Client.Create(ctx, desired); err != nil {
				if apierrors.IsAlreadyExists(err) {
					r.existingClaim(ctx, pg, desired.Name, claims, out)
					continue
				}
				out.Add(fmt.Errorf("create PersistentVolumeClaim %s: %w", desired.Name, err), apierrors.IsInvalid(err))
				out.Report(v1alpha1.PostgresApplyFailedReason, err.Error())
				continue
			}
			children.CountWrite(kind, "PersistentVolumeClaim", "create")
			claims[desired.Name] = desired
		default:
			claims[live.Name] = live
			r.growClaim(ctx, pg, live, out)
		}
	}
	return claims
}

// existingClaim takes a claim that creating found existing although the
// cache lacks it: the cluster's own, made just now or not yet seen again
// after a watch broke, is taken as listed; another's is a conflict, never
// borrowed.
func (r *Reconciler) existingClaim(ctx context.Context, pg *v1alpha1.PostgresCluster, name string, claims map[string]*corev1.PersistentVolumeClaim, out *outcome) {
	live := &corev1.PersistentVolumeClaim{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, live); err != nil {
		out.Add(fmt.Errorf("get PersistentVolumeClaim %s, which exists: %w", name, err), false)
		return
	}
	switch {
	case live.Labels[v1alpha1.PostgresClusterLabel] != pg.Name:
		out.conflict = true
		out.Report(v1alpha1.PostgresConflictReason, fmt.Sprintf("PersistentVolumeClaim %s exists and is not PostgresCluster %s's", name, pg.Name))
	case live.Annotations[v1alpha1.PostgresClusterUIDAnnotation] != string(pg.UID):
		// Labelled as the cluster's name but not marked with its UID: a
		// claim settleClaims has not seen yet, perhaps an earlier
		// cluster's. No pod starts on it until it has; the cluster looks
		// again when the cache sees it, or in 30 s.
		out.conflict = true
	default:
		claims[name] = live
	}
}

// growClaim raises the claim's request to spec.storage.size when it is
// smaller; the storage driver expands the volume.
func (r *Reconciler) growClaim(ctx context.Context, pg *v1alpha1.PostgresCluster, claim *corev1.PersistentVolumeClaim, out *outcome) {
	want := pg.Spec.Storage.Size
	have := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return
	}
	patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if claim.Spec.Resources.Requests == nil {
		claim.Spec.Resources.Requests = corev1.ResourceList{}
	}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = want.DeepCopy()
	if err := r.Client.Patch(ctx, claim, patch); err != nil {
		out.Add(fmt.Errorf("grow PersistentVolumeClaim %s to %s: %w", claim.Name, want.String(), err), apierrors.IsInvalid(err) || apierrors.IsForbidden(err))
		out.Report(v1alpha1.PostgresApplyFailedReason, fmt.Sprintf("PersistentVolumeClaim %s cannot grow to %s: %v", claim.Name, want.String(), err))
		return
	}
	children.CountWrite(kind, "PersistentVolumeClaim", "update")
	r.Recorder.Eventf(pg, claim, corev1.EventTypeNormal, "StorageResizing", "Resize", "PersistentVolumeClaim %s grows to %s", claim.Name, want.String())
}

// resizing tells whether a claim waits for its volume to grow to its
// request.
func resizing(claim *corev1.PersistentVolumeClaim) bool {
	if claim == nil {
		return false
	}
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have, ok := claim.Status.Capacity[corev1.ResourceStorage]
	return ok && have.Cmp(want) < 0
}
