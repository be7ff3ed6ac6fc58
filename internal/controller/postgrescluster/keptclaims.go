package postgrescluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// keptFromEarlier tells whether a claim labelled for pg's name holds an
// earlier PostgresCluster's data: it names another cluster's UID, or,
// made before claims carried one, it is older than pg.
func keptFromEarlier(claim *corev1.PersistentVolumeClaim, pg *v1alpha1.PostgresCluster) bool {
	if uid, ok := claim.Annotations[v1alpha1.PostgresClusterUIDAnnotation]; ok {
		return uid != string(pg.UID)
	}
	return claim.CreationTimestamp.Before(&pg.CreationTimestamp)
}

// adoptsKeptClaims tells whether pg's author asked to take the claims an
// earlier cluster of the name kept: the annotation names pg itself, so
// that one copied from another cluster's manifest takes nothing.
func adoptsKeptClaims(pg *v1alpha1.PostgresCluster) bool {
	return pg.Annotations[v1alpha1.PostgresAdoptKeptClaimsAnnotation] == pg.Name
}

// settleClaims marks the cluster's claims with its UID, and stops its
// instances from starting while claims kept from an earlier cluster of the
// name are not adopted: whoever creates a cluster of a deleted one's name
// would otherwise read, and with deletionPolicy Delete delete, its data.
// Claims made before claims carried the UID, and kept ones the cluster
// adopts, get its UID. claims are the cluster's, listed by listClaims.
func (r *Reconciler) settleClaims(ctx context.Context, pg *v1alpha1.PostgresCluster, claims map[string]*corev1.PersistentVolumeClaim, out *outcome) {
	var kept []string
	for _, claim := range claims {
		if claim.DeletionTimestamp != nil || claim.Annotations[v1alpha1.PostgresClusterUIDAnnotation] == string(pg.UID) {
			continue
		}
		earlier := keptFromEarlier(claim, pg)
		if earlier && !adoptsKeptClaims(pg) {
			kept = append(kept, claim.Name)
			continue
		}
		patch := client.MergeFrom(claim.DeepCopy())
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[v1alpha1.PostgresClusterUIDAnnotation] = string(pg.UID)
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			out.Add(fmt.Errorf("mark PersistentVolumeClaim %s as PostgresCluster %s's: %w", claim.Name, pg.Name, err), false)
			continue
		}
		children.CountWrite(kind, "PersistentVolumeClaim", "patch")
		if earlier {
			r.Recorder.Eventf(pg, claim, corev1.EventTypeNormal, "ClaimAdopted", "Adopt",
				"PersistentVolumeClaim %s, kept from an earlier PostgresCluster %s, adopted with its data (annotation %s)",
				claim.Name, pg.Name, v1alpha1.PostgresAdoptKeptClaimsAnnotation)
		}
	}
	if len(kept) == 0 {
		return
	}
	slices.Sort(kept)
	out.podsHeld = true
	out.Report(v1alpha1.PostgresKeptClaimsReason, fmt.Sprintf(
		"PersistentVolumeClaims %s were kept from an earlier PostgresCluster %s and hold its data: no instance starts until "+
			"annotation %s=%s takes them, data and all (who sets it must be allowed to update claims here), or they are deleted",
		strings.Join(kept, ", "), pg.Name, v1alpha1.PostgresAdoptKeptClaimsAnnotation, pg.Name))
}

// listClaims lists the claims labelled as pg's, by name, once per
// reconcile for settleClaims, ensureClaims and keptBeyond.
func (r *Reconciler) listClaims(ctx context.Context, pg *v1alpha1.PostgresCluster) (map[string]*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pg.Namespace), client.MatchingLabelsSelector{Selector: objectsOf(pg.Name)}); err != nil {
		return nil, fmt.Errorf("list the claims of PostgresCluster %s: %w", pg.Name, err)
	}
	claims := make(map[string]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		claims[list.Items[i].Name] = &list.Items[i]
	}
	return claims, nil
}
