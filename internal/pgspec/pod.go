package pgspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The parts every PostgreSQL pod shares, the instance's and a tool Job's:
// the PostgreSQL image runs the operator's binary, which an init container
// copies from the operator's image, as the postgres user of the official
// images, under the restricted Pod Security Standard.

// PodSecurityContext runs a pod's containers as the postgres user, which
// owns the data directory, and its volumes as its group.
func PodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(UID),
		RunAsGroup:     ptr.To(UID),
		FSGroup:        ptr.To(UID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictedContainer is the security context of the restricted Pod
// Security Standard, with a read-only root: PostgreSQL and the tools
// write only to their volumes.
func RestrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// InstallContainerOf is the init container that copies the operator's
// binary from operatorImage to ManagerPath: the PostgreSQL image has no
// instance manager of its own.
func InstallContainerOf(operatorImage string) corev1.Container {
	return corev1.Container{
		Name:            InstallContainer,
		Image:           operatorImage,
		Command:         []string{OperatorBinary, "instance", "install", ManagerPath},
		SecurityContext: RestrictedContainer(),
		VolumeMounts:    []corev1.VolumeMount{ToolsMount()},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}

// ToolsMount mounts the copied binary.
func ToolsMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: ToolsVolume, MountPath: ToolsDir}
}

// ToolsVolumeOf is the volume the binary is copied into.
func ToolsVolumeOf() corev1.Volume {
	return corev1.Volume{Name: ToolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
