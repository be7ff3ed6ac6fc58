package v1alpha1_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExamplesAreValid sends every object of this package's examples to the
// API server with strict field validation (a dry run, in a namespace of its
// own), so that an example a user copies is never refused or silently
// trimmed.
func TestExamplesAreValid(t *testing.T) {
	suite.NeedsAPIServer(t)
	for _, file := range []string{"tenant.yaml", "backupjob.yaml", "postgrescluster.yaml", "postgres-backup.yaml"} {
		t.Run(file, func(t *testing.T) {
			g := NewWithT(t)
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "example-"}}
			g.Expect(suite.Client.Create(t.Context(), namespace)).To(Succeed())
			data, err := os.ReadFile("../../examples/" + file)
			g.Expect(err).NotTo(HaveOccurred())
			decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				obj := &unstructured.Unstructured{}
				err := decoder.Decode(&obj.Object)
				if errors.Is(err, io.EOF) {
					break
				}
				g.Expect(err).NotTo(HaveOccurred())
				if len(obj.Object) == 0 {
					continue
				}
				if obj.GetKind() != "Tenant" {
					obj.SetNamespace(namespace.Name)
				}
				g.Expect(suite.Client.Create(t.Context(), obj, client.DryRunAll, client.FieldValidation("Strict"))).
					To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
			}
		})
	}
}
