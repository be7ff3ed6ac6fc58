package backupjob_test

import (
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite) runs a real kube-apiserver and etcd,
// without a controller manager: no Job controller (tests finish Jobs by
// writing their status), no garbage collector and no volume binding. The
// reconciler is not registered with the manager: each test calls Reconcile
// itself after moving the fake clock, so that what happens at each scheduled
// time is deterministic. It reads through an uncached client, so that each
// reconcile sees what the previous one wrote.
var (
	suite     envsuite.Suite
	k8sClient client.Client // the test's own client, uncached
	mgr       ctrl.Manager
)

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"backupjob", "postgrescluster"},
		AddToScheme: []func(*runtime.Scheme) error{backupjob.AddToScheme},
		Cache:       backupjob.CacheByObject(),
		Setup: func(s *envsuite.Suite) error {
			k8sClient, mgr = s.Client, s.Manager
			return nil
		},
	}))
}

// newReconciler returns a reconciler on a fake clock set to now, reading
// through the test's uncached client.
func newReconciler(now time.Time, snapshotsServed bool) (*backupjob.Reconciler, *clocktesting.FakeClock) {
	return newReconcilerWith(k8sClient, now, snapshotsServed)
}

// newReconcilerWith is newReconciler writing with c, a wrapper of the
// test's client (an interceptor).
func newReconcilerWith(c client.Client, now time.Time, snapshotsServed bool) (*backupjob.Reconciler, *clocktesting.FakeClock) {
	clock := clocktesting.NewFakeClock(now)
	r := backupjob.NewReconciler(mgr, c, controller.SetupOptions{
		Clock:              clock,
		ClusterDomain:      "cluster.local",
		ServedOptionalAPIs: map[schema.GroupVersionResource]bool{backupjob.SnapshotAPI: snapshotsServed, backupjob.PostgresClusterAPI: true},
	})
	r.APIReader = k8sClient
	backupjob.AgePodListsBy(r, clock)
	return r, clock
}
