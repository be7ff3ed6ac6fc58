// Package tenanttest helps the Tenant's tests: it generates the Tenant CRD
// from the code, so that envtest checks the API as the code declares it, not
// as deploy/ last rendered it.
package tenanttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CRDFile is the name controller-gen gives the Tenant CRD.
const CRDFile = "example.com_tenants.yaml"

// GenerateCRD runs controller-gen on api/v1alpha1 of the repository at
// repoRoot and returns a folder that holds the Tenant CRD alone (the other
// kinds of the group are not the Tenant tests' business), and a function
// that removes it.
func GenerateCRD(repoRoot string) (dir string, cleanup func(), err error) {
	genDir, err := os.MkdirTemp("", "tenant-crd-gen-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(genDir)
	gen := exec.Command("go", "tool", "controller-gen", "crd:crdVersions=v1",
		"paths=./api/v1alpha1/...", "output:crd:dir="+genDir)
	gen.Dir = repoRoot
	if out, err := gen.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("controller-gen: %w\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(genDir, CRDFile))
	if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp("", "tenant-crd-")
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, CRDFile), data, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
