package localcluster

// SIMULATION: a volume provisioner for the local cluster. See simulation.go.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		Provisioner:       simulationProvisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
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
// volume of its size, restores included (the dataSource is not read: no
// volume holds data), and deletes the volumes it made once their claim is
// gone, as a CSI provisioner does for its reclaim policy Delete.
func provisionVolumes(ctx context.Context, cl client.Client) {
	claims := &corev1.PersistentVolumeClaimList{}
	if err := cl.List(ctx, claims); err != nil {
		return
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Status.Phase != corev1.ClaimPending || claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil ||
			ptr.Deref(claim.Spec.StorageClassName, "") != SimulationStorageClass {
			continue
		}
		_ = cl.Create(ctx, simulatedVolume(claim)) // AlreadyExists: made in an earlier round
	}

	volumes := &corev1.PersistentVolumeList{}
	if err := cl.List(ctx, volumes); err != nil {
		return
	}
	for i := range volumes.Items {
		pv := &volumes.Items[i]
		if pv.Annotations[provisionedByAnnotation] == simulationProvisioner && pv.Status.Phase == corev1.VolumeReleased && pv.DeletionTimestamp == nil {
			_ = cl.Delete(ctx, pv, client.Preconditions{UID: &pv.UID})
		}
	}
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
