package localcluster

// SIMULATION: the VolumeSnapshot CRDs and a snapshot simulator for the local
// cluster. See simulation.go.

import (
	"context"
	"embed"
	"fmt"
	"os"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// snapshotCRDs are the VolumeSnapshot, VolumeSnapshotContent and
// VolumeSnapshotClass CRDs, copied verbatim from the config/crd folder of
// the external-snapshotter client module that go.mod requires; the
// operator's snapshot types come from the same module.
// TestSimulationCRDsMatchTheModule fails when they drift apart; this
// command copies them again:
//
//go:generate sh -c "D=$(go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8) && for f in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do install -m 644 $D/config/crd/snapshot.storage.k8s.io_$f.yaml simulation_crds/; done"
//go:embed simulation_crds/*.yaml
var snapshotCRDs embed.FS

// installSnapshotCRDs creates the VolumeSnapshot CRDs.
func installSnapshotCRDs(ctx context.Context, cl client.Client) error {
	if err := createEmbeddedObjects(ctx, cl, snapshotCRDs, "simulation_crds"); err != nil {
		return fmt.Errorf("simulation: %w", err)
	}
	return nil
}

// simulateSnapshots takes each new VolumeSnapshot of a bound claim: it makes
// a VolumeSnapshotContent for it and marks it ready to use, with the
// claim's capacity as restore size, as the external-snapshotter's
// controller and a CSI driver would; where the volume holds data (a real
// process used it), the snapshot holds a copy of it (simulation_data.go). A snapshot annotated
// simulation.example.com/fail: "true" gets an error instead; the snapshots
// of a claim annotated simulation.example.com/hold: "true" wait. Contents whose
// snapshot is gone are deleted (their deletionPolicy is Delete).
func simulateSnapshots(ctx context.Context, cl client.Client, volumesDir string) {
	snapshots := &snapshotv1.VolumeSnapshotList{}
	if err := cl.List(ctx, snapshots); err != nil {
		return
	}
	exists := map[types.UID]bool{}
	workers := simulationWorkers()
	for i := range snapshots.Items {
		s := &snapshots.Items[i]
		exists[s.UID] = true
		if s.DeletionTimestamp != nil || (s.Status != nil && (s.Status.ReadyToUse != nil || s.Status.Error != nil)) {
			continue
		}
		workers.Go(func() error { takeSnapshot(ctx, cl, s, volumesDir); return nil })
	}
	_ = workers.Wait()

	contents := &snapshotv1.VolumeSnapshotContentList{}
	if err := cl.List(ctx, contents); err != nil {
		return
	}
	for i := range contents.Items {
		content := &contents.Items[i]
		if content.Spec.Driver == SimulationDriver && !exists[content.Spec.VolumeSnapshotRef.UID] && content.DeletionTimestamp == nil {
			if volumesDir != "" && content.Spec.Source.SnapshotHandle != nil {
				_ = os.RemoveAll(snapshotDir(volumesDir, *content.Spec.Source.SnapshotHandle))
			}
			_ = cl.Delete(ctx, content, client.Preconditions{UID: &content.UID})
		}
	}
}

func takeSnapshot(ctx context.Context, cl client.Client, s *snapshotv1.VolumeSnapshot, volumesDir string) {
	now := metav1.Now()
	if s.Annotations[SimulationFailAnnotation] == "true" {
		s.Status = &snapshotv1.VolumeSnapshotStatus{
			ReadyToUse: ptr.To(false),
			Error:      &snapshotv1.VolumeSnapshotError{Time: &now, Message: ptr.To("simulated failure: the snapshot is annotated " + SimulationFailAnnotation)},
		}
		_ = cl.Status().Update(ctx, s)
		return
	}
	if s.Spec.Source.PersistentVolumeClaimName == nil {
		return // a pre-provisioned snapshot: nothing to take
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := cl.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: *s.Spec.Source.PersistentVolumeClaimName}, claim); err != nil ||
		claim.Status.Phase != corev1.ClaimBound {
		return // as a CSI snapshotter, wait for the claim to be bound
	}
	if claim.Annotations[SimulationHoldAnnotation] == "true" {
		return // a storage system that takes its time
	}
	size := claim.Status.Capacity[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	if volumesDir != "" && claim.Spec.VolumeName != "" {
		// The volume's data, when a real process used it; taken before
		// the snapshot says it is ready, as a storage system's would be.
		if err := copyTree(volumeDir(volumesDir, claim.Spec.VolumeName), snapshotDir(volumesDir, string(s.UID))); err != nil {
			return // tried again at the next round
		}
	}
	content := &snapshotv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-" + string(s.UID)},
		Spec: snapshotv1.VolumeSnapshotContentSpec{
			DeletionPolicy:          snapshotv1.VolumeSnapshotContentDelete,
			Driver:                  SimulationDriver,
			Source:                  snapshotv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To(string(s.UID))},
			VolumeSnapshotClassName: s.Spec.VolumeSnapshotClassName,
			VolumeSnapshotRef: corev1.ObjectReference{
				APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot",
				Namespace: s.Namespace, Name: s.Name, UID: s.UID,
			},
		},
	}
	if err := cl.Create(ctx, content); err != nil && !apierrors.IsAlreadyExists(err) {
		return
	}
	s.Status = &snapshotv1.VolumeSnapshotStatus{
		BoundVolumeSnapshotContentName: ptr.To(content.Name),
		CreationTime:                   &now,
		ReadyToUse:                     ptr.To(true),
		RestoreSize:                    &size,
	}
	_ = cl.Status().Update(ctx, s)
}
