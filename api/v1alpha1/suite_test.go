package v1alpha1_test

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/envsuite"
)

// suite is one API server with the CRDs of this package's kinds, as deploy/
// installs them, shared by their validation tests.
var suite envsuite.Suite

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"tenant", "backupjob", "postgrescluster"},
		AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme},
	}))
}
