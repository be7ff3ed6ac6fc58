package website_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller"
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
	writes     *writeLog     // the reconciler's writes
	reconciler *website.WebsiteReconciler
	manager    ctrl.Manager // runs reconciler; a test may build another reconciler on it
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
	if fuzzing() {
		// FuzzChildren needs no API server; each fuzz worker process
		// would otherwise start its own.
		os.Exit(m.Run())
	}
	os.Exit(runSuite(m))
}

// fuzzing reports whether this process fuzzes (make fuzz) or is one of the
// fuzzing engine's workers.
func fuzzing() bool {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return true
	}
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

func runSuite(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
		return 1
	}
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "deploy", "components", "website")},
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
		Cache:   website.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	manager = mgr
	writes = &writeLog{byNamespace: map[string]int{}, beforeCreate: map[string]func(context.Context, client.Object){}}
	reconciler = website.NewReconciler(mgr, writes.wrap(asWithWatch(mgr.GetClient())), controller.SetupOptions{
		ClusterDomain:           "cluster.local",
		MaxConcurrentReconciles: 4,
		Clock:                   clock.RealClock{},
	})
	reconciler.ConflictRecheckInterval = time.Second
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

// asWithWatch gives the manager's client the Watch method that the
// interceptor's signature asks for; the reconciler never watches through it.
func asWithWatch(c client.Client) client.WithWatch {
	return withoutWatch{c}
}

type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler does not watch through its client")
}

// zapLevel shows the reconciler's logs with go test -v.
func zapLevel() zapcore.Level {
	if testing.Verbose() {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// writeLog counts the reconciler's write calls per namespace, status writes
// included and dry runs not, and lets a test act just before the reconciler creates an
// object.
type writeLog struct {
	mu           sync.Mutex
	byNamespace  map[string]int
	beforeCreate map[string]func(context.Context, client.Object)
}

func (l *writeLog) count(ns string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byNamespace[ns]
}

func (l *writeLog) add(obj client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byNamespace[obj.GetNamespace()]++
}

// onCreate runs hook before each create the reconciler makes in ns.
func (l *writeLog) onCreate(ns string, hook func(context.Context, client.Object)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beforeCreate[ns] = hook
}

func (l *writeLog) hook(ns string) func(context.Context, client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beforeCreate[ns]
}

// wrap returns c with every write counted.
func (l *writeLog) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if hook := l.hook(obj.GetNamespace()); hook != nil {
				hook(ctx, obj)
			}
			l.add(obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.add(obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.add(obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if len((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) == 0 {
				l.add(applyTarget(obj))
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.add(obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.add(obj)
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, subResource string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.add(obj)
			return c.SubResource(subResource).Update(ctx, obj, opts...)
		},
	})
}

// applyTarget finds the namespace of an apply configuration of any form.
func applyTarget(obj runtime.ApplyConfiguration) client.Object {
	target := &metav1.PartialObjectMetadata{}
	data, err := json.Marshal(obj)
	if err == nil {
		_ = json.Unmarshal(data, target)
	}
	return target
}
