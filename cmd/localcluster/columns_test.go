package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// make run shows each kind with the columns its CRD gives kubectl get, less
// the age, from every namespace for a namespaced kind.
func TestKindsAreShownWithTheirCRDsColumns(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "components", "website", "crd.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())

	kind := showKind(crd)
	g.Expect(kind.resource).To(Equal("websites.example.com"))
	g.Expect(kind.shownArgs).To(Equal("--all-namespaces"))
	g.Expect(kind.args).To(Equal([]string{"--all-namespaces", "-o",
		`custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,IMAGE:.spec.image,READY:.status.ready,STATUS:.status.conditions[?(@.type=="Ready")].reason,URL:.status.url`}))
}
