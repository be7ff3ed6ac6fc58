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
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"example.com/platform-operator/internal/operator"
	"example.com/platform-operator/internal/platform"
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
	for _, kind := range []string{"website", "backupjob"} {
		g.Expect(all).To(HaveKey("ClusterRole//platform-operator-"+kind+"-edit"), "edit and admin gain the %s rights knowingly", kind)
		g.Expect(all["ClusterRole//platform-operator-"+kind+"-edit"].GetLabels()).To(HaveKeyWithValue(aggregateToEdit, "true"))
	}
	g.Expect(all["ClusterRole//platform-operator-backupjob-view"].GetLabels()).To(HaveKeyWithValue(aggregateToView, "true"))
	g.Expect(all).To(HaveKey("ClusterRole//platform-operator-tenant-view"))
	g.Expect(all).NotTo(HaveKey("ClusterRole//platform-operator-tenant-edit"), "creating Tenants is not edit's")
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

// Each component's kinds get ClusterRoles that the built-in view, edit and
// admin aggregate: view reads a kind with its status and scale, edit and
// admin also write the namespaced kinds (never their status); a
// cluster-scoped kind is only read.
func TestUserRolesOfTheKinds(t *testing.T) {
	g := NewWithT(t)
	subresources := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
	}
	crd := func(plural string, scope apiextensionsv1.ResourceScope, sub *apiextensionsv1.CustomResourceSubresources) apiextensionsv1.CustomResourceDefinition {
		return apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural}, Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Subresources: sub}},
		}}
	}
	roles := userRoles("x", []apiextensionsv1.CustomResourceDefinition{
		crd("widgets", apiextensionsv1.NamespaceScoped, subresources),
		crd("realms", apiextensionsv1.ClusterScoped, &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}),
	})
	g.Expect(roles).To(HaveLen(2))
	view, edit := roles[0], roles[1]
	g.Expect(view.Name).To(Equal("platform-operator-x-view"))
	g.Expect(view.Labels).To(Equal(map[string]string{aggregateToView: "true", aggregateToEdit: "true", aggregateToAdmin: "true"}))
	g.Expect(view.Rules).To(Equal([]rbacv1.PolicyRule{
		{APIGroups: []string{"example.com"}, Resources: []string{"widgets", "widgets/status", "widgets/scale"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"example.com"}, Resources: []string{"realms", "realms/status"}, Verbs: []string{"get", "list", "watch"}},
	}))
	g.Expect(edit.Name).To(Equal("platform-operator-x-edit"))
	g.Expect(edit.Labels).To(Equal(map[string]string{aggregateToEdit: "true", aggregateToAdmin: "true"}))
	g.Expect(edit.Rules).To(Equal([]rbacv1.PolicyRule{
		{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"create", "update", "patch", "delete", "deletecollection"}},
		{APIGroups: []string{"example.com"}, Resources: []string{"widgets/scale"}, Verbs: []string{"update", "patch"}},
	}))

	clusterOnly := userRoles("y", []apiextensionsv1.CustomResourceDefinition{crd("realms", apiextensionsv1.ClusterScoped, nil)})
	g.Expect(clusterOnly).To(HaveLen(1), "a cluster-scoped kind is not aggregated into edit or admin")
	g.Expect(userRoles("z", nil)).To(BeEmpty())
}

// An image set with an images: entry in deploy/kustomization.yaml, as its
// comment says, reaches OPERATOR_IMAGE too, from which PostgreSQL pods copy
// the instance manager: base's own replacement runs before that entry.
func TestImageSetOnTopReachesOperatorImage(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS("../../deploy"))).To(Succeed())
	top := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(top)
	g.Expect(err).NotTo(HaveOccurred())
	data = append(data, []byte("images: [{name: example.com/platform-operator, newName: registry.example.com/platform-operator, newTag: v9.9.9}]\n")...)
	g.Expect(os.WriteFile(top, data, 0o644)).To(Succeed())

	rendered, err := render(dir)
	g.Expect(err).NotTo(HaveOccurred())
	deployment := byID(parse(t, rendered))["Deployment/platform-operator-system/platform-operator"]
	g.Expect(deployment).NotTo(BeNil())
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	container := containers[0].(map[string]any)
	g.Expect(container).To(HaveKeyWithValue("image", "registry.example.com/platform-operator:v9.9.9"))
	g.Expect(container["env"]).To(ContainElement(map[string]any{"name": platform.ImageEnv, "value": "registry.example.com/platform-operator:v9.9.9"}))
}
