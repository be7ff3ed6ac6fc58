package domainmetrics

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	examplev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite): a real kube-apiserver serving the
// kinds' CRDs as deploy/ installs them, and a manager whose cache the
// collector reads as in the operator. With go test -short it does not
// start, and the tests that need it skip.
var suite envsuite.Suite

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{Website, Tenant, BackupJob, PostgresCluster},
		AddToScheme: []func(*runtime.Scheme) error{examplev1.AddToScheme, v1alpha1.AddToScheme},
	}))
}
