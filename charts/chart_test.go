// Package charts holds the Helm charts that hack/gen-chart generates from
// deploy/, and the test that they install what deploy/ installs.
package charts

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/helmtest"
	"example.com/platform-operator/internal/platform"
)

const (
	chart    = "platform-operator"
	repoRoot = ".."
)

// helmLabels are the labels the chart adds to deploy/'s objects, by
// Helm's conventions; the comparison leaves them out.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"}

// choice is one choice of values, and the kustomization of deploy/ that
// makes the same choice.
type choice struct {
	name   string
	values map[string]any
	// kustomization, with the components and the resources it names
	// relative to deploy/ (default: base).
	kustomization types.Kustomization
	// off are the components switched off: their CRDs are in the chart's
	// crds/ all the same, and the operator is told to leave them out.
	off []string
}

// The chart renders, with the real helm, the objects that kustomize renders
// from deploy/ for the same choices, but for what Helm's conventions make
// different:
//
//   - the chart adds helmLabels to every object but its CRDs (never to pod
//     templates or selectors);
//   - it leaves out the operator's Namespace (Helm installs into the
//     release's namespace, which it does not create) and the namespaced
//     overlay's watched Namespace (people's objects live there: no uninstall
//     may delete it);
//   - it always has every kind's CRD (Helm installs crds/ whatever the
//     values), so with a kind switched off the operator gets
//     --controllers=*,-KIND,... as its last argument.
func TestChartRendersWhatDeployRenders(t *testing.T) {
	helm := helmtest.Binary(t)
	all := components(t)
	namespaced := only(t, "website")
	namespaced.values["watchNamespace"] = "websites"
	namespaced.kustomization = types.Kustomization{Resources: []string{"overlays/namespaced"}}
	choices := []choice{
		{name: "every kind", kustomization: kustomization(all...)},
		named("website only", only(t, "website")),
		named("tenant and backupjob", only(t, "tenant", "backupjob")),
		named("every kind but website", only(t, slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == "website" })...)),
		named("Websites in one namespace", namespaced),
		{
			name:          "with monitoring",
			values:        map[string]any{"monitoring": map[string]any{"enabled": true}},
			kustomization: kustomization(append(slices.Clone(all), "monitoring")...),
		},
		{
			name: "image replicas and resources",
			values: map[string]any{
				"image":     map[string]any{"repository": "registry.example.com/platform-operator", "tag": "v9.9.9"},
				"replicas":  3,
				"resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}},
			},
			kustomization: func() types.Kustomization {
				k := kustomization(all...)
				k.Images = []types.Image{{Name: "example.com/platform-operator", NewName: "registry.example.com/platform-operator", NewTag: "v9.9.9"}}
				k.Replicas = []types.Replica{{Name: "platform-operator", Count: 3}}
				// Merged, as Helm merges a value's map with the default's.
				k.Patches = []types.Patch{{Patch: `{"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": {"name": "platform-operator", "namespace": "platform-operator-system"},
					"spec": {"template": {"spec": {"containers": [{"name": "operator", "resources": {"limits": {"memory": "1Gi"}}}]}}}}`}}
				// deploy/base's replacement, which copies the image into
				// OPERATOR_IMAGE, runs before an images: entry of a
				// kustomization on top of it: such a kustomization must
				// repeat it, or the operator's pods would copy the instance
				// manager from the old image (the chart sets both).
				k.Replacements = []types.ReplacementField{{Replacement: types.Replacement{
					Source: &types.SourceSelector{
						ResId:     resid.ResId{Gvk: resid.Gvk{Kind: "Deployment"}, Name: platform.Name},
						FieldPath: "spec.template.spec.containers.[name=operator].image",
					},
					Targets: []*types.TargetSelector{{
						Select:     &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "Deployment"}, Name: platform.Name}},
						FieldPaths: []string{"spec.template.spec.containers.[name=operator].env.[name=" + platform.ImageEnv + "].value"},
					}},
				}}}
				return k
			}(),
		},
	}
	for _, c := range choices {
		t.Run(c.name, func(t *testing.T) {
			got := helmTemplate(t, helm, c.values)
			want := kustomizeBuild(t, c.kustomization)
			for key, obj := range want {
				if obj.GetKind() == "Namespace" {
					delete(want, key)
				}
			}
			for key, obj := range got {
				labels := obj.GetLabels()
				for _, l := range helmLabels {
					if _, ok := labels[l]; !ok && obj.GetKind() != "CustomResourceDefinition" {
						t.Errorf("%s lacks the label %s", key, l)
					}
					delete(labels, l)
				}
				obj.SetLabels(labels)
				if obj.GetKind() == "CustomResourceDefinition" && want[key] == nil && switchedOff(obj, c.off) {
					delete(got, key)
				}
			}
			if len(c.off) > 0 {
				addControllersFlag(t, want, c.off)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("helm template differs from kustomize build (-kustomize +helm):\n%s", diff)
			}
		})
	}
}

// Installed into another namespace, the chart names that one wherever
// deploy/ names the operator's: metadata, subjects, and the admission
// policies' expressions that recognise the operator's ServiceAccount.
func TestChartFollowsTheReleaseNamespace(t *testing.T) {
	helm := helmtest.Binary(t)
	cmd := exec.Command(helm, "template", chart, chart, "--namespace", "ops")
	cmd.Env = helmEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs := objects(t, out)
	for key, obj := range objs {
		data, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), platform.Namespace) {
			t.Errorf("%s of the chart installed in ops still names %s", key, platform.Namespace)
		}
	}
	if objs["Deployment/ops/"+platform.Name] == nil {
		t.Errorf("no operator Deployment in ops")
	}
	if !strings.Contains(string(out), "'system:serviceaccount:ops:"+platform.Name+"'") {
		t.Errorf("the admission policies do not recognise the operator's ServiceAccount in ops")
	}
}

// helm lint finds nothing to warn about.
func TestChartLints(t *testing.T) {
	helm := helmtest.Binary(t)
	cmd := exec.Command(helm, "lint", "--strict", chart)
	cmd.Env = helmEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("helm lint --strict: %v\n%s", err, out)
	}
}

// Values the schema refuses, or the chart's checks, fail helm template.
func TestChartRefusesBadValues(t *testing.T) {
	helm := helmtest.Binary(t)
	for name, c := range map[string]struct {
		values map[string]any
		want   string
	}{
		"a misspelt key":       {map[string]any{"replica": 1}, "replica"},
		"a namespace's name":   {map[string]any{"watchNamespace": "Not_A_Name"}, "watchNamespace"},
		"every kind off":       {only(t).values, "every kind is switched off"},
		"namespaced with more": {map[string]any{"watchNamespace": "websites"}, "watchNamespace serves only website"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runHelmTemplate(t, helm, c.values)
			if err == nil {
				t.Fatalf("helm template accepted %v", c.values)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("helm template's refusal does not mention %q:\n%s", c.want, out)
			}
		})
	}
}

func off() map[string]any { return map[string]any{"enabled": false} }

// only is the choice of these components alone: the values switch the
// others off by their kinds' names.
func only(t *testing.T, enabled ...string) choice {
	c := choice{values: map[string]any{}, kustomization: kustomization(enabled...)}
	for _, name := range components(t) {
		if slices.Contains(enabled, name) {
			continue
		}
		c.values[valueKey(t, name)] = off()
		c.off = append(c.off, name)
	}
	return c
}

func named(name string, c choice) choice {
	c.name = name
	return c
}

// valueKey is the switch of a component: its CRD's kind, with a lower-case
// first letter.
func valueKey(t *testing.T, component string) string {
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/components", component, "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil || crd.Spec.Names.Kind == "" {
		t.Fatalf("read the kind of %s's CRD: %v", component, err)
	}
	kind := crd.Spec.Names.Kind
	return strings.ToLower(kind[:1]) + kind[1:]
}

func kustomization(components ...string) types.Kustomization {
	k := types.Kustomization{Resources: []string{"base"}}
	for _, c := range components {
		k.Components = append(k.Components, "components/"+c)
	}
	return k
}

// components are the names of deploy/'s components of a kind, those with
// a CRD; the others (monitoring) are options, off by default.
func components(t *testing.T) []string {
	matches, err := filepath.Glob(filepath.Join(repoRoot, "deploy/components/*/crd.yaml"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("list deploy/'s components: %v (%d found)", err, len(matches))
	}
	var names []string
	for _, m := range matches {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	return names
}

// switchedOff reports whether a CRD is one of a component in off.
func switchedOff(crd *unstructured.Unstructured, off []string) bool {
	for _, c := range off {
		data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/components", c, "crd.yaml"))
		if err == nil && bytes.Contains(data, []byte("name: "+crd.GetName()+"\n")) {
			return true
		}
	}
	return false
}

// addControllersFlag appends to the operator's arguments in want the flag
// that leaves out the components off.
func addControllersFlag(t *testing.T, want map[string]*unstructured.Unstructured, off []string) {
	d := want["Deployment/"+platform.Namespace+"/"+platform.Name]
	if d == nil {
		t.Fatal("kustomize rendered no operator Deployment")
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	flag := "--controllers=*"
	for _, name := range slices.Sorted(slices.Values(off)) {
		flag += ",-" + name
	}
	c["args"] = append(c["args"].([]any), flag)
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// helmTemplate renders the chart as helm install into the operator's
// namespace would, CRDs included, and returns its objects by id.
func helmTemplate(t *testing.T, helm string, values map[string]any) map[string]*unstructured.Unstructured {
	out, err := runHelmTemplate(t, helm, values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return objects(t, []byte(out))
}

func runHelmTemplate(t *testing.T, helm string, values map[string]any) (string, error) {
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	// helm splits --values at commas, which a subtest's folder may hold.
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, "template", chart, chart, "--namespace", platform.Namespace, "--include-crds", "--values", file)
	cmd.Env = helmEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

// helmEnv keeps helm's configuration and caches in the test's own folder,
// away from the user's.
func helmEnv(t *testing.T) []string {
	dir := t.TempDir()
	return append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"))
}

// kustomizeBuild renders k, whose paths are relative to deploy/, with
// deploy/ read into memory, and returns its objects by id.
func kustomizeBuild(t *testing.T, k types.Kustomization) map[string]*unstructured.Unstructured {
	mem := filesys.MakeFsInMemory()
	if err := devenv.CopyYAMLTree(filepath.Join(repoRoot, "deploy"), mem, "/deploy"); err != nil {
		t.Fatalf("read deploy/: %v", err)
	}
	k.TypeMeta = types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind}
	for i := range k.Resources {
		k.Resources[i] = "../deploy/" + k.Resources[i]
	}
	for i := range k.Components {
		k.Components[i] = "../deploy/" + k.Components[i]
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.MkdirAll("/choice"); err != nil {
		t.Fatal(err)
	}
	if err := mem.WriteFile("/choice/kustomization.yaml", data); err != nil {
		t.Fatal(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/choice")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, out)
}

// objects parses a multi-document YAML into objects by Kind/namespace/name.
func objects(t *testing.T, data []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	objs := map[string]*unstructured.Unstructured{}
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("read YAML: %v", err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("parse YAML: %v\n%s", err, doc)
		}
		if len(obj.Object) == 0 {
			continue
		}
		key := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
		if objs[key] != nil {
			t.Fatalf("%s twice", key)
		}
		objs[key] = obj
	}
}
