package localcluster

// SIMULATION. Volumes that hold real data: where a real process (the
// PostgreSQL simulation) used a volume, its host folder is its data. A
// snapshot of such a volume copies the folder, as a storage system's
// snapshot keeps the blocks of that moment; a claim restored from the
// snapshot, or cloned from another claim, starts as a copy of it. A volume
// no real process used has no folder, and its snapshots and restores none.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// snapshotDir is the host folder of a snapshot's copy of its volume.
func snapshotDir(volumesDir, handle string) string {
	return filepath.Join(volumesDir, "snapshots", handle)
}

// copyTree copies the folder src to dst, which must not exist, keeping
// owners and modes: a copy made elsewhere first and renamed into place, so
// that a half-made copy is never taken for a whole one.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o711); err != nil {
		return err
	}
	tmp := dst + ".partial"
	_ = os.RemoveAll(tmp)
	if out, err := exec.Command("cp", "-a", src, tmp).CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("copy %s: %v: %s", src, err, out)
	}
	return os.Rename(tmp, dst)
}
