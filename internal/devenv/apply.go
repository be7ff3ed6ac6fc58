// Package devenv sets up the operator on a local cluster the way a user
// would on a real one: it installs the kustomization of deploy/ (all of it
// but the operator's own Deployment, PodDisruptionBudget and metrics
// Service) and applies examples/, obtains a token of the operator's own
// ServiceAccount, and runs the operator binary with it as a local process,
// so that RBAC and the admission policy are those that deploy/ installs.
// `make run`, the end-to-end, reliability and benchmark tests share it.
package devenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// FieldManager is the field manager of what devenv applies.
const FieldManager = "platform-operator-devenv"

// Applier server-side applies YAML manifests, like kubectl apply
// --server-side.
type Applier struct {
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier returns an Applier for the cluster of config.
func NewApplier(config *rest.Config) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	return &Applier{
		dynamic: dyn,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
	}, nil
}

// ApplyPaths applies, in order, every object of the given YAML files, of the
// kustomizations of the given folders that have a kustomization.yaml
// (rendered as kubectl apply -k would, less the operator's own workload:
// see RenderKustomization), and of the .yaml files of the other folders (not
// recursively). An object whose kind is not known yet, such as a Website
// right after its CRD, is retried until the API serves it.
func (a *Applier) ApplyPaths(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	var applied []*unstructured.Unstructured
	for _, path := range paths {
		if _, err := os.Stat(filepath.Join(path, "kustomization.yaml")); err == nil {
			data, err := RenderKustomization(path)
			if err != nil {
				return applied, err
			}
			objs, err := a.Apply(ctx, data)
			applied = append(applied, objs...)
			if err != nil {
				return applied, fmt.Errorf("%s: %w", path, err)
			}
			continue
		}
		files, err := yamlFiles(path)
		if err != nil {
			return applied, err
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return applied, err
			}
			objs, err := a.Apply(ctx, data)
			applied = append(applied, objs...)
			if err != nil {
				return applied, fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return applied, nil
}

func yamlFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	return matches, nil
}

// Apply applies every object of a multi-document YAML.
func (a *Applier) Apply(ctx context.Context, data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var applied []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return applied, a.waitServed(ctx, applied)
		}
		if err != nil {
			return applied, fmt.Errorf("read YAML: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return applied, fmt.Errorf("parse YAML: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		result, err := a.applyObject(ctx, obj)
		if err != nil {
			return applied, fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		applied = append(applied, result)
	}
}

func (a *Applier) applyObject(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	mapping, err := a.restMapping(ctx, obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	resource := a.dynamic.Resource(mapping.Resource)
	var client dynamic.ResourceInterface = resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		client = resource.Namespace(ns)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)})
}

// Describe names an object as kubectl does: kind/name.
func Describe(obj *unstructured.Unstructured) string {
	return strings.ToLower(obj.GetKind()) + "/" + obj.GetName()
}

// restMapping waits until the API server serves gvk, for up to 30 s: a CRD
// applied just before takes a moment to be served.
func (a *Applier) restMapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var mapping *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			a.mapper.Reset()
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("the API server does not serve %s: %w", gvk, err)
	}
	return mapping, nil
}

// waitServed waits until the API server's discovery lists the kinds of the
// CRDs among objs, as kubectl wait --for condition=established would: an
// operator started right after the CRDs are applied would otherwise find
// its kinds missing.
func (a *Applier) waitServed(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		for _, v := range versions {
			version, _ := v.(map[string]any)
			if served, _ := version["served"].(bool); !served {
				continue
			}
			name, _ := version["name"].(string)
			if _, err := a.restMapping(ctx, schema.GroupVersionKind{Group: group, Version: name, Kind: kind}); err != nil {
				return fmt.Errorf("CRD %s: %w", obj.GetName(), err)
			}
		}
	}
	return nil
}
