package tenant_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite) runs a real kube-apiserver and etcd
// with the Tenant reconciler in a manager. There is no controller manager: no
// garbage collector (owned objects stay after their owner goes) and no
// namespace controller (a deleted namespace stays Terminating), which is
// what the deletion tests need to see a slow namespace. The API server
// issues and reviews ServiceAccount tokens and authorizes with RBAC.
var (
	suite      envsuite.Suite
	restConfig *rest.Config
	k8sClient  client.Client // the test's own client, uncached, as cluster admin
	fakeClock  *clocktesting.FakeClock
)

// deletionGracePeriod is the reconciler's, short so that the tests see a
// Tenant go while its namespace is still terminating.
const deletionGracePeriod = 20 * time.Second

// deployerRole is a ClusterRole that may create Deployments, allowed to
// Tenants in this suite.
const deployerRole = "test-deployer"

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"tenant"},
		AddToScheme: []func(*runtime.Scheme) error{tenantv1.AddToScheme},
		Cache:       tenant.CacheByObject(),
		Setup: func(s *envsuite.Suite) error {
			restConfig, k8sClient = s.Config, s.Client
			fakeClock = clocktesting.NewFakeClock(time.Now())
			reconciler := tenant.NewReconciler(s.Manager, s.Manager.GetClient(), controller.SetupOptions{Clock: fakeClock})
			reconciler.CAData = restConfig.CAData
			reconciler.DeletionGracePeriod = deletionGracePeriod
			// The built-in roles are aggregated by kube-controller-manager,
			// which envtest lacks: they grant nothing here. The tests that
			// need a role that grants something bind this one, made by the
			// suite.
			reconciler.AllowedOwnerRoles = append(slices.Clone(tenant.DefaultAllowedOwnerRoles), deployerRole)
			reconciler.ConflictRecheckInterval = time.Second
			if err := reconciler.SetupWithManager(s.Manager, 2); err != nil {
				return err
			}
			return s.Client.Create(context.Background(), &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: deployerRole},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "create"}}},
			})
		},
	}))
}

// needsAPIServer skips a test in -short mode.
func needsAPIServer(t *testing.T) {
	t.Helper()
	suite.NeedsAPIServer(t)
}
