package v1_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// These tests send Websites to a real API server with the generated CRD
// (deploy/crd.yaml) and check which it refuses, and that the refusal names
// the field.

var restConfig *rest.Config

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
		os.Exit(1)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "deploy", "crd.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if restConfig, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(restConfig, client.Options{})
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
	tests := []struct {
		name  string
		yaml  string
		field string // the API server's message names it
	}{
		{"port 0", "spec: {image: nginx:1.25, port: 0}", "spec.port"},
		{"port 65536", "spec: {image: nginx:1.25, port: 65536}", "spec.port"},
		{"port as a string", `spec: {image: nginx:1.25, port: "80"}`, "spec.port"},
		{"missing image", "spec: {port: 80}", "spec.image"},
		{"empty image", `spec: {image: ""}`, "spec.image"},
		{"image with spaces", `spec: {image: "nginx 1.25"}`, "spec.image"},
		{"image with a newline", `spec: {image: "nginx:1.25\nprivileged: true"}`, "spec.image"},
		{"image with YAML inside", `spec: {image: "nginx:1.25\n  securityContext:\n    privileged: true"}`, "spec.image"},
		{"image with quotes", `spec: {image: "nginx\"1.25"}`, "spec.image"},
		{"image of 10 KB", "spec: {image: " + strings.Repeat("a", 10*1024) + "}", "spec.image"},
		{"negative replicas", "spec: {image: nginx:1.25, replicas: -1}", "spec.replicas"},
		{"huge replicas", "spec: {image: nginx:1.25, replicas: 1000000}", "spec.replicas"},
		{"readiness path without a slash", "spec: {image: nginx:1.25, readinessPath: healthz}", "spec.readinessPath"},
		{"run as root", "spec: {image: nginx:1.25, runAsUser: 0}", "spec.runAsUser"},
		{"env name with '='", `spec: {image: nginx:1.25, env: [{name: "A=B", value: x}]}`, "spec.env[0].name"},
		{"env with value and valueFrom", `spec: {image: nginx:1.25, env: [{name: A, value: x, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}`, "spec.env[0].valueFrom"},
		{"env from both a ConfigMap and a Secret", `spec: {image: nginx:1.25, env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: k}, secretKeyRef: {name: s, key: k}}}]}`, "spec.env[0].valueFrom"},
		{"duplicate env names", `spec: {image: nginx:1.25, env: [{name: A, value: x}, {name: A, value: y}]}`, "spec.env[1]"},
		{"limit below request", `spec: {image: nginx:1.25, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}`, "spec.resources.limits"},
		{"quantity that is not one", `spec: {image: nginx:1.25, resources: {requests: {cpu: lots}}}`, "spec.resources.requests.cpu"},
		{"ingress host not a DNS name", `spec: {image: nginx:1.25, ingress: {host: "Not_A_Host!"}}`, "spec.ingress.host"},
		{"ingress host with a scheme", `spec: {image: nginx:1.25, ingress: {host: "https://www.example.com"}}`, "spec.ingress.host"},
		{"ingress path without a slash", `spec: {image: nginx:1.25, ingress: {host: www.example.com, path: docs}}`, "spec.ingress.path"},
		{"tlsSecretName without a host", `spec: {image: nginx:1.25, ingress: {tlsSecretName: www-tls}}`, "spec.ingress.tlsSecretName"},
		{"ingress class not a name", `spec: {image: nginx:1.25, ingress: {className: "Big Class"}}`, "spec.ingress.className"},
		{"no spec", "", "spec"},
	}
	c := newClient(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(t.Context(), website(t, fmt.Sprintf("invalid-%d", i), tt.yaml))
			g.Expect(err).To(HaveOccurred())
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.field))
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
