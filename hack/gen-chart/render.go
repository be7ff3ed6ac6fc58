package main

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/devenv"
)

// deployTree is deploy/ read into memory, where kustomizations that exist
// nowhere on disk (a component alone) can be put together and rendered.
type deployTree struct {
	fs filesys.FileSystem
}

// readDeploy copies the YAML files of root's deploy/ to /deploy of an
// in-memory file system.
func readDeploy(root string) (*deployTree, error) {
	mem := filesys.MakeFsInMemory()
	if err := devenv.CopyYAMLTree(filepath.Join(root, "deploy"), mem, "/deploy"); err != nil {
		return nil, err
	}
	return &deployTree{fs: mem}, nil
}

// render builds the kustomization in the folder dir of the tree (such as
// /deploy/base) as kustomize build would.
func (t *deployTree) render(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(t.fs, dir)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		// Through JSON, so that numbers are int64 as unstructured's
		// helpers expect.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", dir, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("render %s: %w", dir, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// renderComponents renders a kustomization, written into the tree under
// name, that has the given resources and components (folders of the tree).
func (t *deployTree) renderComponents(name string, resources, components []string) ([]*unstructured.Unstructured, error) {
	k := types.Kustomization{
		TypeMeta:   types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:  resources,
		Components: components,
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("marshal the kustomization %s: %w", name, err)
	}
	dir := "/gen-chart/" + name
	if err := t.fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	if err := t.fs.WriteFile(dir+"/kustomization.yaml", data); err != nil {
		return nil, err
	}
	return t.render(dir)
}

// kustomizationComponents returns the components that the kustomization
// of dir lists, as written there (relative to dir).
func (t *deployTree) kustomizationComponents(dir string) ([]string, error) {
	data, err := t.fs.ReadFile(dir + "/kustomization.yaml")
	if err != nil {
		return nil, fmt.Errorf("read the kustomization of %s: %w", dir, err)
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("parse the kustomization of %s: %w", dir, err)
	}
	return k.Components, nil
}

// id names an object as Kind/namespace/name, unique in one rendering.
func id(obj *unstructured.Unstructured) string {
	return obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}
