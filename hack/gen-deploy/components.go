package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"strings"

	"example.com/platform-operator/internal/operator"
)

// controllersDir holds one package per controller, relative to the root.
const controllersDir = "internal/controller"

// rbacMarker starts the comment lines from which controller-gen generates
// roles.
const rbacMarker = "+kubebuilder:rbac:"

// component is the kustomize component of one controller.
type component struct {
	// name is the controller's, the name of its package and folder.
	name string
	// pkg is the controller's package folder, relative to the root.
	pkg string
	// crds are the CRDs it serves, as plural.group.
	crds []string
}

// findComponents returns a component for each controller of the operator's
// registry, sorted by name: its package is internal/controller/<name>, which
// must hold the RBAC markers of what it needs, and its CRD is that of the
// resource it reconciles.
func findComponents(root string) ([]component, error) {
	var components []component
	for _, d := range operator.Controllers() {
		pkg := filepath.Join(controllersDir, d.Name)
		marked, err := hasRBACMarkers(filepath.Join(root, pkg))
		if err != nil {
			return nil, err
		}
		if !marked {
			return nil, fmt.Errorf("controller %s: %s has no RBAC markers: its component would grant it nothing", d.Name, pkg)
		}
		crd := d.Resource.Resource + "." + d.Resource.Group
		components = append(components, component{name: d.Name, pkg: pkg, crds: []string{crd}})
	}
	sort.Slice(components, func(i, j int) bool { return components[i].name < components[j].name })
	return components, nil
}

// hasRBACMarkers reports whether a Go file under dir, tests aside, has an
// RBAC marker.
func hasRBACMarkers(dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		found, err = fileHasMarker(path)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("look for RBAC markers in %s: %w", dir, err)
	}
	return found, nil
}

func fileHasMarker(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "//") && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(line, "//")), rbacMarker) {
			return true, nil
		}
	}
	return false, scanner.Err()
}
