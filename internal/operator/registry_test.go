package operator

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// root is the repository, from this package's folder.
var root = filepath.Join("..", "..")

// Every kind of the registry has each part docs/adding-a-kind.md lists, in
// the folders the checklist names; and every kind folder, component and
// guide belongs to a kind of the registry. A kind added without one of its
// parts, or a part left behind, fails here.
func TestEveryRegisteredKindHasItsParts(t *testing.T) {
	for _, d := range Controllers() {
		t.Run(d.Name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := d.AddToScheme(scheme); err != nil {
				t.Fatalf("AddToScheme: %v", err)
			}
			crd := readCRD(t, filepath.Join("deploy", "components", d.Name, "crd.yaml"))
			if crd.Spec.Group != d.Resource.Group || crd.Spec.Names.Plural != d.Resource.Resource {
				t.Errorf("deploy/components/%s/crd.yaml serves %s.%s, not the Descriptor's %s", d.Name, crd.Spec.Names.Plural, crd.Spec.Group, d.Resource.GroupResource())
			}
			gvk := schema.GroupVersionKind{Group: d.Resource.Group, Version: d.Resource.Version, Kind: crd.Spec.Names.Kind}
			if !scheme.Recognizes(gvk) {
				t.Errorf("the Descriptor's AddToScheme does not register %s, the kind of its CRD", gvk)
			}
			if d.Setup == nil || d.Cache == nil {
				t.Error("the Descriptor has no Setup or no Cache")
			}
			for _, file := range []string{
				filepath.Join("internal", "controller", d.Name, "reconciler.go"),
				filepath.Join("deploy", "components", d.Name, "kustomization.yaml"),
				filepath.Join("deploy", "components", d.Name, "role.yaml"),
				filepath.Join("test", "e2e", d.Name+"_test.go"),
				filepath.Join("docs", d.Name+".md"),
				filepath.Join("docs", "api-"+d.Name+".md"),
			} {
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("missing %s", file)
				}
			}
			if !exampleHas(t, filepath.Join("examples", d.Name+".yaml"), crd.Spec.Names.Kind) {
				t.Errorf("examples/%s.yaml holds no %s", d.Name, crd.Spec.Names.Kind)
			}
			readme, err := os.ReadFile(filepath.Join(root, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(readme, []byte("(docs/"+d.Name+".md)")) {
				t.Errorf("README.md does not link the guide docs/%s.md", d.Name)
			}
		})
	}
}

func TestNoKindPartIsLeftOutsideTheRegistry(t *testing.T) {
	var names []string
	for _, d := range Controllers() {
		names = append(names, d.Name)
	}
	// Folders that are no kind's: shared machinery of internal/controller,
	// and the monitoring component of deploy/components.
	shared := []string{"kit", "monitoring"}
	for _, dir := range []string{filepath.Join("internal", "controller"), filepath.Join("deploy", "components")} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(names, e.Name()) && !slices.Contains(shared, e.Name()) {
				t.Errorf("%s/%s belongs to no kind of the registry (internal/operator/registry.go)", dir, e.Name())
			}
		}
	}
}

func readCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatalf("missing %s: %v", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return crd
}

// exampleHas tells whether the manifests of file hold an object of kind.
func exampleHas(t *testing.T, file, kind string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return false
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc struct {
			Kind string `json:"kind"`
		}
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if strings.EqualFold(doc.Kind, kind) {
			return true
		}
	}
}
