package tenant_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/controller/tenant/tenanttest"
	"example.com/platform-operator/internal/platform"
)

// The envtest suite runs a real kube-apiserver and etcd with the Tenant
// reconciler in a manager. There is no controller manager: no garbage
// collector (owned objects stay after their owner goes) and no namespace
// controller (a deleted namespace stays Terminating), which is what the
// deletion tests need to see a slow namespace. The API server issues and
// reviews ServiceAccount tokens and authorizes with RBAC.
var (
	restConfig *rest.Config
	k8sClient  client.Client // the test's own client, uncached, as cluster admin
	fakeClock  *clocktesting.FakeClock
	scheme     = runtime.NewScheme()
)

// deletionGracePeriod is the reconciler's, short so that the tests see a
// Tenant go while its namespace is still terminating.
const deletionGracePeriod = 20 * time.Second

// deployerRole is a ClusterRole that may create Deployments, allowed to
// Tenants in this suite.
const deployerRole = "test-deployer"

func TestMain(m *testing.M) {
	flag.Parse()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenantv1.AddToScheme(scheme))
	if testing.Short() {
		// Only the unit tests run; the envtest ones skip themselves.
		os.Exit(m.Run())
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
		return 1
	}
	crdDir, cleanup, err := tenanttest.GenerateCRD("../../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	testEnv := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{crdDir}, ErrorIfCRDPathMissing: true}
	if restConfig, err = testEnv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	if k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Logger:  zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())),
		Cache:   cache.Options{ByObject: controller.ByObject(tenant.CacheByObject())},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	fakeClock = clocktesting.NewFakeClock(time.Now())
	reconciler := &tenant.Reconciler{
		Client:              mgr.GetClient(),
		APIReader:           mgr.GetAPIReader(),
		Recorder:            mgr.GetEventRecorder(platform.Name),
		Clock:               fakeClock,
		CAData:              restConfig.CAData,
		DeletionGracePeriod: deletionGracePeriod,
		// The built-in roles are aggregated by kube-controller-manager,
		// which envtest lacks: they grant nothing here. The tests that need
		// a role that grants something bind this one, made by the suite.
		AllowedOwnerRoles:       append(slices.Clone(tenant.DefaultAllowedOwnerRoles), deployerRole),
		ConflictRecheckInterval: time.Second,
		MaxConcurrentReconciles: 2,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "set up reconciler:", err)
		return 1
	}
	if err := k8sClient.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: deployerRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "create"}}},
	}); err != nil {
		fmt.Fprintln(os.Stderr, "ClusterRole:", err)
		return 1
	}
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

// zapLevel shows the reconciler's logs with go test -v.
func zapLevel() zapcore.Level {
	if testing.Verbose() {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// needsAPIServer skips a test in -short mode.
func needsAPIServer(t *testing.T) {
	t.Helper()
	if k8sClient == nil {
		t.Skip("needs the envtest API server (not in -short mode)")
	}
}
