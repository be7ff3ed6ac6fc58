package devenv

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const repoRoot = "../.."

// ids names the objects of a multi-document YAML as Kind/namespace/name.
func ids(t *testing.T, data []byte) []string {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []string
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName())
	}
}

// The default installation is the whole kustomization of deploy/, less the
// operator's workload, which devenv runs as a process.
func TestDefaultInstallLeavesOutTheOperatorWorkload(t *testing.T) {
	g := NewWithT(t)
	data, err := RenderKustomization(repoRoot + "/deploy")
	g.Expect(err).NotTo(HaveOccurred())
	objects := ids(t, data)
	g.Expect(objects).To(ContainElements(
		"Namespace//platform-operator-system",
		"ServiceAccount/platform-operator-system/platform-operator",
		"CustomResourceDefinition//websites.example.com",
		"ClusterRoleBinding//platform-operator-website",
		"ValidatingAdmissionPolicy//platform-operator-guardrails",
		"ValidatingAdmissionPolicyBinding//platform-operator-guardrails",
	))
	for _, workload := range []string{
		"Deployment/platform-operator-system/platform-operator",
		"PodDisruptionBudget/platform-operator-system/platform-operator",
		"Service/platform-operator-system/platform-operator-metrics",
	} {
		g.Expect(objects).NotTo(ContainElement(workload))
	}
	// Namespaces and CRDs come first, as with kubectl apply -k.
	g.Expect(objects[0]).To(Equal("Namespace//platform-operator-system"))

	components, err := Components(repoRoot)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(components).To(ContainElement("website"))
	every, err := RenderComponents(repoRoot, components)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(t, every)).To(ConsistOf(objects), "deploy/kustomization.yaml lists every component")
}

// Components choose the kinds whose CRDs and rights are installed; the base
// is always there.
func TestComponentsChooseTheKinds(t *testing.T) {
	g := NewWithT(t)
	base, err := RenderComponents(repoRoot, []string{})
	g.Expect(err).NotTo(HaveOccurred())
	objects := ids(t, base)
	g.Expect(objects).To(ContainElements(
		"ClusterRoleBinding//platform-operator",
		"RoleBinding/platform-operator-system/platform-operator",
		"ValidatingAdmissionPolicy//platform-operator-guardrails",
	))
	g.Expect(objects).NotTo(ContainElement("CustomResourceDefinition//websites.example.com"))

	website, err := RenderComponents(repoRoot, []string{"website"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(t, website)).To(ContainElements(
		"CustomResourceDefinition//websites.example.com",
		"ClusterRole//platform-operator-website",
		"ClusterRoleBinding//platform-operator-website",
	))

	_, err = RenderComponents(repoRoot, []string{"nosuchkind"})
	g.Expect(err).To(MatchError(ContainSubstring(`no component "nosuchkind"`)))
	g.Expect(err).To(MatchError(ContainSubstring("website")), "the error names the components there are")
}

// The namespaced overlay grants the website rights in its namespace only.
func TestNamespacedOverlayInstall(t *testing.T) {
	g := NewWithT(t)
	data, err := RenderKustomization(repoRoot + "/deploy/overlays/namespaced")
	g.Expect(err).NotTo(HaveOccurred())
	objects := ids(t, data)
	g.Expect(objects).To(ContainElements(
		"Namespace//websites",
		"RoleBinding/websites/platform-operator-website",
		"ClusterRoleBinding//platform-operator",
	))
	g.Expect(objects).NotTo(ContainElement("ClusterRoleBinding//platform-operator-website"))
}
