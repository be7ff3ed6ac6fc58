package website_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
)

// The envtest suite runs a real kube-apiserver and etcd (no controller
// manager, so no garbage collector and no Deployment controller: tests set
// Deployment status themselves) with the reconciler in a manager, configured
// as in production.
var (
	testEnv    *envtest.Environment
	restConfig *rest.Config
	k8sClient  client.Client // the test's own client, uncached
	writes     *writeCounter // the reconciler's writes
	reconciler *website.WebsiteReconciler
	scheme     = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(websitev1.AddToScheme(scheme))
	if testing.Short() {
		fmt.Println("envtest suite skipped in -short mode")
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
		return 1
	}
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "deploy", "crd.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	restConfig, err = testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Logger:  zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())),
		Cache:   website.CacheOptions(nil),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	writes = &writeCounter{Client: mgr.GetClient()}
	reconciler = &website.WebsiteReconciler{
		Client:                  writes,
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(website.ManagerName),
		ClusterDomain:           "cluster.local",
		MaxConcurrentReconciles: 4,
		ConflictRecheckInterval: time.Second,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "set up reconciler:", err)
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

// writeCounter counts the write calls the reconciler makes, to check that a
// reconcile with nothing to change makes none.
type writeCounter struct {
	client.Client
	count atomic.Int64
}

func (c *writeCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *writeCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *writeCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.count.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *writeCounter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.count.Add(1)
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *writeCounter) Status() client.SubResourceWriter {
	return &statusWriteCounter{SubResourceWriter: c.Client.Status(), count: &c.count}
}

type statusWriteCounter struct {
	client.SubResourceWriter
	count *atomic.Int64
}

func (c *statusWriteCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	c.count.Add(1)
	return c.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (c *statusWriteCounter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	c.count.Add(1)
	return c.SubResourceWriter.Update(ctx, obj, opts...)
}

func (c *statusWriteCounter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	c.count.Add(1)
	return c.SubResourceWriter.Apply(ctx, obj, opts...)
}
