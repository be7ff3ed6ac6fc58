// Package envsuite runs the envtest suite of a controller package the same
// way for every kind: a real kube-apiserver and etcd (no controller manager:
// no garbage collector, no Deployment, Job or namespace controller), the
// kind's CRDs as deploy/ installs them, and a controller manager with the
// kind's cache settings, into which the suite sets up its reconciler.
//
// In go test -short the API server is not started and only the tests that
// need none run: the others call NeedsAPIServer and skip themselves.
package envsuite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/platform-operator/internal/children"
)

// Options say what one package's suite needs.
type Options struct {
	// Components are the kustomize components of deploy/components whose
	// CRDs the API server serves, such as "website".
	Components []string
	// AddToScheme registers the kind's types (client-go's are always).
	AddToScheme []func(*runtime.Scheme) error
	// Cache is the kind's cache settings (its Descriptor's Cache).
	Cache map[client.Object]children.CacheSetting
	// Setup sets up the suite's reconcilers on s.Manager before it starts.
	Setup func(s *Suite) error
}

// Suite is what the tests of a package share.
type Suite struct {
	// Config reaches the API server as its administrator.
	Config *rest.Config
	// Client is the tests' own client, uncached, as administrator.
	Client client.Client
	Scheme *runtime.Scheme
	// Manager runs the suite's reconcilers; a test may set up more on it.
	Manager ctrl.Manager
}

// Run runs the tests of m with the suite that opts describes, after it
// assigned it to *suite, and returns the exit code for os.Exit. In -short
// mode, and in a fuzzing process, the tests run without an API server and
// *suite keeps only its Scheme.
func Run(m *testing.M, suite *Suite, opts Options) int {
	flag.Parse()
	suite.Scheme = runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(suite.Scheme))
	for _, add := range opts.AddToScheme {
		utilruntime.Must(add(suite.Scheme))
	}
	if testing.Short() || fuzzing() {
		return m.Run()
	}
	code, err := run(m, suite, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest suite:", err)
		return 1
	}
	return code
}

func run(m *testing.M, suite *Suite, opts Options) (int, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return 0, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
	}
	root, err := repositoryRoot()
	if err != nil {
		return 0, err
	}
	var crds []string
	for _, c := range opts.Components {
		crds = append(crds, filepath.Join(root, "deploy", "components", c, "crd.yaml"))
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true},
	}
	if suite.Config, err = env.Start(); err != nil {
		return 0, fmt.Errorf("start the API server: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	if suite.Client, err = client.New(suite.Config, client.Options{Scheme: suite.Scheme}); err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	suite.Manager, err = ctrl.NewManager(suite.Config, ctrl.Options{
		Scheme:  suite.Scheme,
		Logger:  zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())),
		Cache:   cache.Options{ByObject: children.ByObject(opts.Cache)},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return 0, fmt.Errorf("manager: %w", err)
	}
	if opts.Setup != nil {
		if err := opts.Setup(suite); err != nil {
			return 0, fmt.Errorf("set up: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- suite.Manager.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code, nil
}

// NeedsAPIServer skips a test that needs the suite's API server when it
// does not run (-short).
func (s *Suite) NeedsAPIServer(t testing.TB) {
	t.Helper()
	if s.Client == nil {
		t.Skip("needs the envtest API server (not in -short mode)")
	}
}

// repositoryRoot is the folder of go.mod above the working directory, which
// go test sets to the package's folder.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// fuzzing reports whether this process fuzzes (make fuzz) or is one of the
// fuzzing engine's workers: they need no API server, and each worker would
// otherwise start its own.
func fuzzing() bool {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return true
	}
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// zapLevel shows the reconcilers' logs with go test -v.
func zapLevel() zapcore.Level {
	if testing.Verbose() {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
