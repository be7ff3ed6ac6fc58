// Package postgresclustertest sets up the envtest suites that run the
// PostgresCluster controller against a real API server.
package postgresclustertest

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/postgrescluster"
	"example.com/platform-operator/internal/envsuite"
)

// SuiteOptions runs the PostgresCluster controller in the suite's manager,
// its cache configured as in production, with the component's manifests.
func SuiteOptions() envsuite.Options {
	return envsuite.Options{
		Components:  []string{"postgrescluster"},
		AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme},
		Cache:       postgrescluster.CacheByObject(),
		Setup: func(s *envsuite.Suite) error {
			r := postgrescluster.NewReconciler(s.Manager, s.Manager.GetClient(), controller.SetupOptions{ClusterDomain: "cluster.local", Clock: clock.RealClock{}})
			return r.SetupWithManager(s.Manager, 2)
		},
	}
}
