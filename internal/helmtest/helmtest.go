// Package helmtest finds the helm binary that the chart's tests run:
// hack/helm.sh builds it, and make test passes its folder in HELM_BIN_DIR.
package helmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BinDirEnv names the variable that gives the folder of helm (make test
// sets it from hack/helm.sh --dir).
const BinDirEnv = "HELM_BIN_DIR"

// Binary returns the path of helm in $HELM_BIN_DIR. It skips the test in
// -short mode and when the variable is unset (go test ./... without make),
// and fails it when the folder has no working helm.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs helm: skipped in -short mode")
	}
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		t.Skipf("%s is not set: make test builds helm (hack/helm.sh) and sets it", BinDirEnv)
	}
	helm := filepath.Join(dir, "helm")
	if out, err := exec.Command(helm, "version", "--short").CombinedOutput(); err != nil {
		t.Fatalf("%s version: %v\n%s\nrun hack/helm.sh to build it", helm, err, out)
	}
	return helm
}
