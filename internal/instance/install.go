package instance

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Install copies this program to dest, executable: the pod's init
// container puts the operator's binary into the volume that the PostgreSQL
// image's container runs it from.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("read %s: %w", self, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-")
	if err != nil {
		return fmt.Errorf("install to %s: %w", dest, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("install to %s: %w", dest, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("install to %s: %w", dest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install to %s: %w", dest, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install to %s: %w", dest, err)
	}
	return nil
}
