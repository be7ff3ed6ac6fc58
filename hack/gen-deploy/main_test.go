package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"example.com/platform-operator/internal/operator"
)

// writeTree writes files (path relative to root: content) under a new
// temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const markedController = `package x

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get
func f() {}
`

// A component is made for each controller of the registry, with the CRD of
// the resource it reconciles.
func TestComponentPerRegisteredController(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{"internal/controller/descriptor.go": "package controller\n"}
	var want []component
	for _, d := range operator.Controllers() {
		files["internal/controller/"+d.Name+"/sub/reconcile.go"] = markedController
		want = append(want, component{name: d.Name, pkg: "internal/controller/" + d.Name, crds: []string{d.Resource.Resource + "." + d.Resource.Group}})
	}
	components, err := findComponents(writeTree(t, files))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(components).To(ConsistOf(want))
	g.Expect(components).To(ContainElement(component{name: "website", pkg: "internal/controller/website", crds: []string{"websites.example.com"}}))
}

// A registered controller whose package has no RBAC markers fails the
// generation, rather than installing a kind whose controller may do nothing.
func TestRegisteredControllerWithoutMarkersIsAnError(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{"internal/controller/website/reconciler.go": "package website\n"})
	_, err := findComponents(root)
	g.Expect(err).To(MatchError(ContainSubstring("has no RBAC markers")))
}

// Each generated role is bound to the operator's ServiceAccount: a
// ClusterRole cluster-wide, a Role in its own namespace.
func TestBindingsGrantEachRoleToTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	dir := writeTree(t, map[string]string{"role.yaml": `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: platform-operator-x
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: platform-operator-x
  namespace: somewhere
rules: []
`})
	g.Expect(writeBindings(dir)).To(Succeed())
	data, err := os.ReadFile(filepath.Join(dir, "role_binding.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	objects := parse(t, data)
	g.Expect(objects).To(HaveLen(2))
	for i, want := range []struct{ kind, namespace, roleKind string }{
		{"ClusterRoleBinding", "", "ClusterRole"},
		{"RoleBinding", "somewhere", "Role"},
	} {
		obj := objects[i]
		g.Expect(obj.GetKind()).To(Equal(want.kind))
		g.Expect(obj.GetName()).To(Equal("platform-operator-x"))
		g.Expect(obj.GetNamespace()).To(Equal(want.namespace))
		g.Expect(obj.Object["roleRef"]).To(HaveKeyWithValue("kind", want.roleKind))
		g.Expect(obj.Object["subjects"]).To(ConsistOf(map[string]any{
			"kind": "ServiceAccount", "name": "platform-operator", "namespace": "platform-operator-system",
		}))
	}
}

// The default install has every component, cluster-wide; the namespaced
// overlay binds the Website rights in namespace websites only and tells the
// operator to watch only it.
func TestRenderedInstalls(t *testing.T) {
	g := NewWithT(t)
	data, err := render("../../deploy")
	g.Expect(err).NotTo(HaveOccurred())
	all := byID(parse(t, data))
	g.Expect(all).To(HaveKey("ClusterRoleBinding//platform-operator-website"))
	g.Expect(all).To(HaveKey("CustomResourceDefinition//websites.example.com"))
	g.Expect(all).To(HaveKey("ValidatingAdmissionPolicyBinding//platform-operator-guardrails"))
	g.Expect(args(t, all)).To(ContainElement("--all-namespaces"))
	for id, obj := range all {
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/name", "platform-operator"), id)
	}

	data, err = render("../../deploy/overlays/namespaced")
	g.Expect(err).NotTo(HaveOccurred())
	namespaced := byID(parse(t, data))
	g.Expect(namespaced).NotTo(HaveKey("ClusterRoleBinding//platform-operator-website"))
	g.Expect(namespaced).To(HaveKey("RoleBinding/websites/platform-operator-website"))
	g.Expect(namespaced).To(HaveKey("ClusterRoleBinding//platform-operator"), "the reviews that guard /metrics stay cluster-wide")
	g.Expect(args(t, namespaced)).To(ContainElement("--namespace=websites"))
	g.Expect(args(t, namespaced)).NotTo(ContainElement("--all-namespaces"))
}

func args(t *testing.T, objects map[string]*unstructured.Unstructured) []string {
	t.Helper()
	deployment := objects["Deployment/platform-operator-system/platform-operator"]
	if deployment == nil {
		t.Fatal("no operator Deployment")
	}
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func parse(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objects []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

func byID(objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, obj := range objects {
		out[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = obj
	}
	return out
}
