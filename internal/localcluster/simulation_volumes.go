package localcluster

// SIMULATION: a volume provisioner and resizer for the local cluster. See
// simulation.go.

import (
	"context"
	"fmt"
	"os"
	"slices"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// provisionedByAnnotation is what kube-controller-manager's volume
// controller reads to leave a volume's deletion to its provisioner.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// simulationProvisioner is the provisioner name of the StorageClass.
const simulationProvisioner = SimulationDriver + "/local"

// installStorageSimulation creates the StorageClass "local", the default,
// and the CSIDriver of the simulated volumes.
func installStorageSimulation(ctx context.Context, cl client.Client) error {
	class := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        SimulationStorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          simulationProvisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	driver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: SimulationDriver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(false)},
	}
	for _, obj := range []client.Object{class, driver} {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("simulation: create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// provisionVolumes binds each Pending claim of the class "local" to a new
// volume of its size, restores included (a restore starts as a copy of its
// source's data, when the source holds any: simulation_data.go), expands the volumes of
// bound claims that ask for more, and deletes the volumes it made once
// their claim is gone, as a CSI provisioner does for its reclaim policy
// Delete, with their host folder in volumesDir (if not empty).
func provisionVolumes(ctx context.Context, cl client.Client, volumesDir string) {
	claims := &corev1.PersistentVolumeClaimList{}
	if err := cl.List(ctx, claims); err != nil {
		return
	}
	workers := simulationWorkers()
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.DeletionTimestamp != nil || ptr.Deref(claim.Spec.StorageClassName, "") != SimulationStorageClass {
			continue
		}
		switch {
		case claim.Status.Phase == corev1.ClaimPending && claim.Spec.VolumeName == "":
			workers.Go(func() error {
				pv := simulatedVolume(claim)
				if volumesDir != "" {
					if err := restoreData(ctx, cl, claim, volumesDir, pv.Name); err != nil {
						return nil // tried again at the next round
					}
				}
				_ = cl.Create(ctx, pv) // AlreadyExists: made in an earlier round
				return nil
			})
		case claim.Status.Phase == corev1.ClaimBound:
			workers.Go(func() error { expandVolume(ctx, cl, claim); return nil })
		}
	}
	_ = workers.Wait()

	volumes := &corev1.PersistentVolumeList{}
	if err := cl.List(ctx, volumes); err != nil {
		return
	}
	for i := range volumes.Items {
		pv := &volumes.Items[i]
		if pv.Annotations[provisionedByAnnotation] == simulationProvisioner && pv.Status.Phase == corev1.VolumeReleased && pv.DeletionTimestamp == nil {
			if volumesDir != "" {
				_ = os.RemoveAll(volumeDir(volumesDir, pv.Name))
			}
			_ = cl.Delete(ctx, pv, client.Preconditions{UID: &pv.UID})
		}
	}
}

// expandVolume grows the volume of a bound claim that requests more than
// its capacity, then the claim's capacity, as the CSI resizer does for a
// driver that needs no expansion on the node.
func expandVolume(ctx context.Context, cl client.Client, claim *corev1.PersistentVolumeClaim) {
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have := claim.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 || claim.Spec.VolumeName == "" {
		return
	}
	pv := &corev1.PersistentVolume{}
	if err := cl.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil ||
		pv.Annotations[provisionedByAnnotation] != simulationProvisioner {
		return
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(want) < 0 {
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if err := cl.Update(ctx, pv); err != nil {
			return
		}
	}
	if claim.Status.Capacity == nil {
		claim.Status.Capacity = corev1.ResourceList{}
	}
	claim.Status.Capacity[corev1.ResourceStorage] = want
	if claim.Status.AllocatedResources == nil {
		claim.Status.AllocatedResources = corev1.ResourceList{}
	}
	claim.Status.AllocatedResources[corev1.ResourceStorage] = want
	claim.Status.AllocatedResourceStatuses = nil
	claim.Status.Conditions = slices.DeleteFunc(claim.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimResizing || c.Type == corev1.PersistentVolumeClaimFileSystemResizePending
	})
	_ = cl.Status().Update(ctx, claim)
}

// simulatedVolume is the volume for claim, bound to it in advance (the
// volume controller completes the binding), with a fake CSI source.
func simulatedVolume(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := claim.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "sim-" + string(claim.UID),
			Annotations: map[string]string{provisionedByAnnotation: simulationProvisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              SimulationStorageClass,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: SimulationDriver, VolumeHandle: string(claim.UID)},
			},
		},
	}
}

// restoreData gives the new volume pvName of claim the data of the claim's
// dataSource (a VolumeSnapshot or a claim to clone), if that holds any.
func restoreData(ctx context.Context, cl client.Client, claim *corev1.PersistentVolumeClaim, volumesDir, pvName string) error {
	source := claim.Spec.DataSourceRef
	if source == nil && claim.Spec.DataSource != nil {
		source = &corev1.TypedObjectReference{APIGroup: claim.Spec.DataSource.APIGroup, Kind: claim.Spec.DataSource.Kind, Name: claim.Spec.DataSource.Name}
	}
	dst := volumeDir(volumesDir, pvName)
	if source == nil {
		return nil
	}
	if _, err := os.Stat(dst); err == nil {
		return nil // copied in an earlier round
	}
	switch source.Kind {
	case "VolumeSnapshot":
		snap := &snapshotv1.VolumeSnapshot{}
		if err := cl.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: source.Name}, snap); err != nil {
			return err
		}
		if snap.Status == nil || snap.Status.ReadyToUse == nil || !*snap.Status.ReadyToUse {
			return fmt.Errorf("snapshot %s is not ready", source.Name)
		}
		return copyTree(snapshotDir(volumesDir, string(snap.UID)), dst)
	case "PersistentVolumeClaim":
		src := &corev1.PersistentVolumeClaim{}
		if err := cl.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: source.Name}, src); err != nil {
			return err
		}
		if src.Spec.VolumeName == "" {
			return fmt.Errorf("claim %s is not bound", source.Name)
		}
		return copyTree(volumeDir(volumesDir, src.Spec.VolumeName), dst)
	}
	return nil
}
