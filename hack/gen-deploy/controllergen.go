package main

import (
	"bytes"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/platform"
	"strings"
)

// baseRoleName names the roles of the operator as a whole; a component's
// are baseRoleName-<component>.
const baseRoleName = platform.Name

// controllerGen runs the controller-gen pinned by go.mod's tool directive in
// root.
func controllerGen(root string, args ...string) error {
	cmd := exec.Command("go", append([]string{"tool", "controller-gen"}, args...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("controller-gen %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// generateCRDs writes the CRDs of every API package into dir, one file per
// CRD, named group_plural.yaml by controller-gen. Embedded object metadata
// is kept in the schema, so that the labels and annotations of a
// BackupJob's Job template are not pruned by the API server.
func generateCRDs(root, dir string) error {
	return controllerGen(root, "crd:crdVersions=v1,generateEmbeddedObjectMeta=true", "paths=./api/...", "output:crd:dir="+dir)
}

// generateRoles writes into dir/role.yaml the ClusterRole (and the Role of
// each namespace that markers name) that the RBAC markers of the packages
// matched by paths grant.
func generateRoles(root, roleName, paths, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", dir, err)
	}
	if err := controllerGen(root, "rbac:roleName="+roleName, "paths="+paths, "output:rbac:dir="+abs); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "role.yaml")); err != nil {
		return fmt.Errorf("controller-gen wrote no role for %s: %w", paths, err)
	}
	return nil
}

// copyCRDs writes the CRDs named plural.group, from controller-gen's output
// in crdDir, into one file, as controller-gen wrote them.
func copyCRDs(crdDir string, crds []string, path string) error {
	var out bytes.Buffer
	for _, crd := range crds {
		plural, group, ok := strings.Cut(crd, ".")
		if !ok {
			return fmt.Errorf("CRD %q is not plural.group", crd)
		}
		data, err := os.ReadFile(filepath.Join(crdDir, group+"_"+plural+".yaml"))
		if err != nil {
			return fmt.Errorf("controller-gen generated no CRD %s from ./api/... (are its types and markers there?): %w", crd, err)
		}
		data, err = trimEmbeddedDescriptions(data)
		if err != nil {
			return fmt.Errorf("CRD %s: %w", crd, err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return writeFile(path, out.Bytes())
}

// embeddedTemplates are the properties whose schemas are whole Kubernetes
// types embedded in a kind (a BackupJob's Job templates). Their field
// descriptions are the upstream API's, found with kubectl explain job, and
// would make the CRD larger than the API server accepts in one request
// (about 1.5 MB): they are dropped, the property's own description stays.
var embeddedTemplates = map[string]bool{"jobTemplate": true}

// trimEmbeddedDescriptions removes the descriptions inside the schemas of
// embeddedTemplates from a CRD.
func trimEmbeddedDescriptions(data []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	var walk func(node any, inEmbedded bool)
	walk = func(node any, inEmbedded bool) {
		switch n := node.(type) {
		case map[string]any:
			if inEmbedded {
				if _, ok := n["description"].(string); ok {
					delete(n, "description")
				}
			}
			for key, child := range n {
				if key == "properties" {
					if props, ok := child.(map[string]any); ok {
						for name, prop := range props {
							if embeddedTemplates[name] && !inEmbedded {
								if p, ok := prop.(map[string]any); ok {
									for k, v := range p {
										if k != "description" {
											walk(v, true)
										}
									}
								}
								continue
							}
							walk(prop, inEmbedded)
						}
					}
					continue
				}
				walk(child, inEmbedded)
			}
		case []any:
			for _, child := range n {
				walk(child, inEmbedded)
			}
		}
	}
	walk(crd, false)
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return out, nil
}
