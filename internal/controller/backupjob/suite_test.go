package backupjob_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/backupjob"
)

// The envtest suite runs a real kube-apiserver and etcd, without a
// controller manager: no Job controller (tests finish Jobs by writing their
// status), no garbage collector and no volume binding. The reconciler is not
// registered with a manager: each test calls Reconcile itself after moving
// the fake clock, so that what happens at each scheduled time is
// deterministic. It reads through an uncached client, so that each
// reconcile sees what the previous one wrote.
var (
	restConfig *rest.Config
	k8sClient  client.Client // the test's own client, uncached
	mgr        ctrl.Manager
	scheme     = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(backupjob.AddToScheme(scheme))
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
	crdDir, err := os.MkdirTemp("", "backupjob-crd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(crdDir)
	// Generated from the code, with the options deploy/ must use:
	// generateEmbeddedObjectMeta keeps the Job template's labels and
	// annotations, which the API server would otherwise prune.
	gen := exec.Command("go", "tool", "controller-gen", "crd:crdVersions=v1,generateEmbeddedObjectMeta=true",
		"paths=./api/v1alpha1/...", "output:crd:dir="+crdDir)
	gen.Dir = filepath.Join("..", "..", "..")
	if out, err := gen.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "controller-gen: %v\n%s", err, out)
		return 1
	}
	testEnv := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(crdDir, "example.com_backupjobs.yaml")},
			ErrorIfPathMissing: true,
		},
	}
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
	mgr, err = ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Logger:  zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())),
		Cache:   backupjob.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
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

// newReconciler returns a reconciler on a fake clock set to now, reading
// through the test's uncached client.
func newReconciler(now time.Time, snapshotsServed bool) (*backupjob.Reconciler, *clocktesting.FakeClock) {
	clock := clocktesting.NewFakeClock(now)
	r := backupjob.NewReconciler(mgr, k8sClient, controller.SetupOptions{
		Clock:              clock,
		ServedOptionalAPIs: map[schema.GroupVersionResource]bool{backupjob.SnapshotAPI: snapshotsServed},
	})
	r.APIReader = k8sClient
	return r, clock
}

// zapLevel shows the reconciler's logs with go test -v.
func zapLevel() zapcore.Level {
	if testing.Verbose() {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
