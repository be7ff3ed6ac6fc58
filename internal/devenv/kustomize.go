package devenv

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/platform"
)

// RenderKustomization renders the kustomization of dir, as kubectl apply -k
// would, less the operator's own workload (see isOperatorWorkload).
func RenderKustomization(dir string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	return render(filesys.MakeFsOnDisk(), abs)
}

// RenderComponents renders deploy/base of repoRoot with the given components
// of deploy/components, as a kustomization that lists just those would, less
// the operator's own workload. It reads deploy/ but writes nothing: the
// kustomization is put together in memory.
func RenderComponents(repoRoot string, components []string) ([]byte, error) {
	deployDir := filepath.Join(repoRoot, "deploy")
	mem := filesys.MakeFsInMemory()
	if err := CopyYAMLTree(deployDir, mem, "/deploy"); err != nil {
		return nil, err
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"../deploy/base"},
	}
	for _, c := range components {
		if !mem.Exists("/deploy/components/" + c + "/kustomization.yaml") {
			there, _ := Components(repoRoot)
			return nil, fmt.Errorf("no component %q in %s (there are: %s)", c, filepath.Join(deployDir, "components"), strings.Join(there, ", "))
		}
		k.Components = append(k.Components, "../deploy/components/"+c)
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("marshal the kustomization: %w", err)
	}
	if err := mem.MkdirAll("/install"); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/install/kustomization.yaml", data); err != nil {
		return nil, err
	}
	return render(mem, "/install")
}

// ApplyComponents installs deploy/base of repoRoot with the given components
// of deploy/components, as RenderComponents renders them.
func (a *Applier) ApplyComponents(ctx context.Context, repoRoot string, components []string) ([]*unstructured.Unstructured, error) {
	data, err := RenderComponents(repoRoot, components)
	if err != nil {
		return nil, err
	}
	return a.Apply(ctx, data)
}

// render builds the kustomization of dir in fsys, in kubectl apply -k's
// order (namespaces and CRDs first), and drops the operator's workload.
func render(fsys filesys.FileSystem, dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(opts).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("render the kustomization %s: %w", dir, err)
	}
	if err := dropOperatorWorkload(resources); err != nil {
		return nil, err
	}
	data, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("render the kustomization %s: %w", dir, err)
	}
	return data, nil
}

// dropOperatorWorkload removes the Deployment that runs the operator in a
// real cluster, its PodDisruptionBudget and its metrics Service: devenv runs
// the operator as a local process instead, and a second operator (kwok would
// "run" its pods) would only confuse.
func dropOperatorWorkload(resources resmap.ResMap) error {
	for _, r := range resources.Resources() {
		if r.GetNamespace() != platform.Namespace {
			continue
		}
		gvk := r.GetGvk()
		switch {
		case gvk.Group == "apps" && gvk.Kind == "Deployment",
			gvk.Group == "policy" && gvk.Kind == "PodDisruptionBudget",
			gvk.Group == "" && gvk.Kind == "Service":
			if err := resources.Remove(r.CurId()); err != nil {
				return fmt.Errorf("leave out %s %s: %w", gvk.Kind, r.GetName(), err)
			}
		}
	}
	return nil
}

// CopyYAMLTree copies the YAML files under dir on disk to the folder to of
// mem: deploy/ read into memory, where kustomizations that exist nowhere on
// disk can be put together and rendered (here, by the chart generator and
// by the chart's tests).
func CopyYAMLTree(dir string, mem filesys.FileSystem, to string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := to + "/" + filepath.ToSlash(rel)
		if err := mem.MkdirAll(filepath.Dir(target)); err != nil {
			return err
		}
		return mem.WriteFile(target, data)
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	return nil
}

// Components returns the names of the components of repoRoot's
// deploy/components that serve a kind (they hold its CRD), sorted: one per
// kind the operator serves. Options without a kind, such as monitoring,
// are left out.
func Components(repoRoot string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "components", "*", "crd.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list the components: %w", err)
	}
	var names []string
	for _, m := range matches {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	slices.Sort(names)
	return names, nil
}
