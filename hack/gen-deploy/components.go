package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// crdsOf names the CRDs (plural.group) that the controller of each package
// internal/controller/<name> serves: its component installs them. A new kind
// adds a line here; a controller of built-in kinds only has an empty one.
var crdsOf = map[string][]string{
	"website":   {"websites.example.com"},
	"tenant":    {"tenants.example.com"},
	"backupjob": {"backupjobs.example.com"},
}

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

// findComponents returns a component for each package under
// internal/controller that has RBAC markers, sorted by name. A package with
// markers but no line in crdsOf is an error: its kind would be installed
// without its CRD.
func findComponents(root string) ([]component, error) {
	entries, err := os.ReadDir(filepath.Join(root, controllersDir))
	if err != nil {
		return nil, fmt.Errorf("list the controllers: %w", err)
	}
	var components []component
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		pkg := filepath.Join(controllersDir, entry.Name())
		marked, err := hasRBACMarkers(filepath.Join(root, pkg))
		if err != nil {
			return nil, err
		}
		if !marked {
			continue
		}
		crds, ok := crdsOf[entry.Name()]
		if !ok {
			return nil, fmt.Errorf("%s has RBAC markers but no line in crdsOf (hack/gen-deploy/components.go) naming its CRDs", pkg)
		}
		components = append(components, component{name: entry.Name(), pkg: pkg, crds: crds})
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
