package localcluster

// SIMULATION: real data on the simulated volumes of PostgreSQL pods. See
// simulation_postgres.go.
//
// A PersistentVolume that a PostgreSQL pod mounts gets a host folder,
// <cluster dir>/volumes/<pv name>/, owned by the postgres user, mode 0700;
// it stays as long as the PersistentVolume exists, across pods, and goes
// when the provisioner deletes the volume (simulation_volumes.go). An
// emptyDir lives in the pod's own folder and goes with the pod; a path on
// no volume lands in the pod's "root file system", <pod folder>/rootfs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// claimDirs returns the host folder of each claim volume of pod, by volume
// name, making them. It returns errNotYet while a claim is missing or not
// bound, as a kubelet waits to mount it.
func (s *postgresSimulation) claimDirs(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	dirs := map[string]string{}
	for _, vol := range pod.Spec.Volumes {
		var claimName string
		switch {
		case vol.PersistentVolumeClaim != nil:
			claimName = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			claimName = pod.Name + "-" + vol.Name
		default:
			continue
		}
		claim := &corev1.PersistentVolumeClaim{}
		if err := s.cl.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: claimName}, claim); apierrors.IsNotFound(err) {
			return nil, errNotYet
		} else if err != nil {
			return nil, fmt.Errorf("claim %s: %w", claimName, err)
		}
		if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
			return nil, errNotYet
		}
		pv := &corev1.PersistentVolume{}
		if err := s.cl.Get(ctx, types.NamespacedName{Name: claim.Spec.VolumeName}, pv); apierrors.IsNotFound(err) {
			return nil, errNotYet
		} else if err != nil {
			return nil, fmt.Errorf("volume %s: %w", claim.Spec.VolumeName, err)
		}
		dir := volumeDir(s.volumes, pv.Name)
		if err := s.owner.mkdir(dir); err != nil {
			return nil, fmt.Errorf("folder of volume %s: %w", pv.Name, err)
		}
		dirs[vol.Name] = dir
	}
	return dirs, nil
}

// volumeDir is the host folder of a PersistentVolume.
func volumeDir(volumesDir, pvName string) string {
	return filepath.Join(volumesDir, pvName)
}

// sweepVolumeDirs removes the folders of PersistentVolumes that no longer
// exist, however they went.
func sweepVolumeDirs(ctx context.Context, cl client.Client, volumesDir string) {
	entries, err := os.ReadDir(volumesDir)
	if err != nil || len(entries) == 0 {
		return
	}
	volumes := &corev1.PersistentVolumeList{}
	if err := cl.List(ctx, volumes); err != nil {
		return
	}
	exists := map[string]bool{}
	for _, pv := range volumes.Items {
		exists[pv.Name] = true
	}
	for _, e := range entries {
		// The snapshots' copies have a folder of their own, which the
		// snapshot simulator empties (simulation_data.go).
		if !exists[e.Name()] && e.Name() != "snapshots" && !strings.HasSuffix(e.Name(), ".partial") {
			_ = os.RemoveAll(filepath.Join(volumesDir, e.Name()))
		}
	}
}

// containerPaths maps the paths of a container to the host.
type containerPaths struct {
	pod       *corev1.Pod
	container *corev1.Container
	claimDirs map[string]string
	podDir    string
	owner     fileOwner
}

// defaultPGDATA is where the PostgreSQL image keeps its data when PGDATA is
// not set.
const defaultPGDATA = "/var/lib/postgresql/data"

// onHost is where the container's path p is on the host, through the
// volume mounted deepest above it; its parent folder exists.
func (c *containerPaths) onHost(p string) (string, error) {
	if p == "" {
		p = defaultPGDATA
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	p = filepath.Clean(p)
	var mount *corev1.VolumeMount
	for i := range c.container.VolumeMounts {
		m := &c.container.VolumeMounts[i]
		mp := filepath.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && (mount == nil || len(mp) > len(filepath.Clean(mount.MountPath))) {
			mount = m
		}
	}
	base, rel := filepath.Join(c.podDir, "rootfs"), p
	if mount != nil {
		var err error
		if base, err = c.volumeBase(mount); err != nil {
			return "", err
		}
		rel = strings.TrimPrefix(p, filepath.Clean(mount.MountPath))
	}
	if err := c.owner.mkdirAll(base, filepath.Dir(filepath.Clean("/"+rel))); err != nil {
		return "", err
	}
	return filepath.Join(base, rel), nil
}

// volumeBase is the host folder of what mount mounts.
func (c *containerPaths) volumeBase(mount *corev1.VolumeMount) (string, error) {
	var vol *corev1.Volume
	for i := range c.pod.Spec.Volumes {
		if c.pod.Spec.Volumes[i].Name == mount.Name {
			vol = &c.pod.Spec.Volumes[i]
		}
	}
	var base string
	switch {
	case vol == nil:
		return "", fmt.Errorf("the mount at %s names no volume of the pod", mount.MountPath)
	case c.claimDirs[vol.Name] != "":
		base = c.claimDirs[vol.Name]
	case vol.EmptyDir != nil:
		base = filepath.Join(c.podDir, "volumes", vol.Name)
		if err := c.owner.mkdirAll(c.podDir, filepath.Join("volumes", vol.Name)); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("volume %s (at %s) is of a kind the simulation does not provide", vol.Name, mount.MountPath)
	}
	if mount.SubPath != "" {
		if err := c.owner.mkdirAll(base, mount.SubPath); err != nil {
			return "", err
		}
		base = filepath.Join(base, mount.SubPath)
	}
	return base, nil
}

// mkdirAll makes the folders of rel under base, each owned by o with mode
// 0700.
func (o fileOwner) mkdirAll(base, rel string) error {
	dir := base
	if err := o.mkdir(dir); err != nil {
		return err
	}
	for _, part := range strings.Split(filepath.Clean("/"+rel), "/") {
		if part == "" {
			continue
		}
		if part == ".." {
			return fmt.Errorf("%q leaves its volume", rel)
		}
		dir = filepath.Join(dir, part)
		if err := o.mkdir(dir); err != nil {
			return err
		}
	}
	return nil
}
