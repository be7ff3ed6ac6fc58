package v1_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/envsuite"
)

// These tests send Websites to a real API server with the generated CRD
// (deploy/components/website/crd.yaml) and check which it refuses, and that the refusal names
// the field.

var suite envsuite.Suite

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"website"},
		AddToScheme: []func(*runtime.Scheme) error{v1.AddToScheme},
	}))
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	suite.NeedsAPIServer(t)
	c, err := client.New(suite.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// website parses a Website from YAML with a name unique to the test case.
func website(t *testing.T, name, yamlSpec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := "apiVersion: example.com/v1\nkind: Website\nmetadata:\n  name: " + name + "\n  namespace: default\n" + yamlSpec
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("test case YAML: %v", err)
	}
	return obj
}

func TestInvalidWebsitesAreRejectedNamingTheField(t *testing.T) {
	tests := websitetest.InvalidWebsites
	c := newClient(t)
	for i, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(t.Context(), website(t, fmt.Sprintf("invalid-%d", i), tt.Spec))
			g.Expect(err).To(HaveOccurred())
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.Field))
		})
	}
}

func TestNamesThatCannotNameAServiceAreRejected(t *testing.T) {
	c := newClient(t)
	for _, name := range []string{"1site", strings.Repeat("a", 64), "my.site"} {
		g := NewWithT(t)
		err := c.Create(t.Context(), website(t, name, "spec: {image: nginx:1.25}"))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("metadata.name"), name)
	}
}

// Unknown fields are refused when the client asks for strict validation, as
// kubectl does by default; otherwise they are dropped, never stored.
func TestUnknownFields(t *testing.T) {
	g := NewWithT(t)
	c := newClient(t)
	err := c.Create(t.Context(), website(t, "unknown-strict", "spec: {image: nginx:1.25, privileged: true}"),
		client.FieldValidation("Strict"))
	g.Expect(err).To(MatchError(ContainSubstring(`unknown field "spec.privileged"`)))

	obj := website(t, "unknown-default", "spec: {image: nginx:1.25, privileged: true}")
	g.Expect(c.Create(t.Context(), obj)).To(Succeed())
	_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "privileged")
	g.Expect(found).To(BeFalse(), "pruned")
}

func TestValidWebsitesAreAccepted(t *testing.T) {
	c := newClient(t)
	for n, path := range []string{
		"../../testdata/tutorial/website.yaml",
		"../../examples/website.yaml",
		"../../examples/website-full.yaml",
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if obj.GetKind() != "Website" {
				continue
			}
			obj.SetName(fmt.Sprintf("%s-%d-%d", obj.GetName(), n, i))
			obj.SetNamespace("default")
			if err := c.Create(t.Context(), obj); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
	}
}
