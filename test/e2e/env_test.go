// Package e2e tests the operator end to end on the local cluster: the
// operator binary runs as a process with the token of its own
// ServiceAccount, installed from deploy/ as a user would install it, against
// a real control plane with kwok nodes.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
)

// repoRoot is where deploy/, examples/ and testdata/ are.
const repoRoot = "../.."

var (
	scheme = runtime.NewScheme()
	// operatorBinary is built once for the whole suite.
	operatorBinary string
	// shared is the cluster most tests use, with the operator installed from
	// deploy/ and watching all namespaces.
	shared *environment
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The test's own clients and the local cluster's simulation parts log
	// nothing a test reads; the operator's log is its own file.
	ctrllog.SetLogger(logr.Discard())
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(websitev1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	if testing.Short() {
		fmt.Println("end-to-end tests skipped in -short mode")
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv(localcluster.BinDirEnv) == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: run the tests with make test, which builds the control plane\n", localcluster.BinDirEnv)
		return 1
	}
	buildDir, err := os.MkdirTemp("", "platform-operator-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(buildDir)
	if operatorBinary, err = devenv.BuildOperator(repoRoot, buildDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shared, err = newEnvironment(ctx, envOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "set up the shared cluster:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		log := shared.operator().LogPath
		fmt.Fprintf(os.Stderr, "the end of the operator's log (%s):\n%s\n", log, devenv.TailFile(log, 40))
	}
	shared.Stop()
	if postgresEnv != nil {
		postgresEnv.Stop()
	}
	return code
}

// environment is a local cluster with the operator installed from deploy/.
type environment struct {
	*devenv.Environment
}

type envOptions struct {
	// manifests to install before the operator starts (default: the
	// cluster-wide deploy/ files).
	manifests []string
	// operatorArgs replace the default --all-namespaces --verbose.
	operatorArgs []string
	// noOperator leaves the operator to the test.
	noOperator bool
	// simulations runs the local cluster's simulation parts: storage, and
	// real PostgreSQL for PostgresClusters' pods.
	simulations bool
}

func newEnvironment(ctx context.Context, opts envOptions) (*environment, error) {
	// The PostgreSQL cluster runs the object store, which make test builds.
	storeBinDir := ""
	if opts.simulations {
		storeBinDir = os.Getenv(localcluster.ObjectStoreBinDirEnv)
	}
	if opts.operatorArgs == nil {
		opts.operatorArgs = []string{"--all-namespaces", "--verbose"}
	}
	env, err := devenv.StartEnvironment(ctx, devenv.EnvironmentOptions{
		RepoRoot:       repoRoot,
		Scheme:         scheme,
		Manifests:      opts.manifests,
		OperatorBinary: operatorBinary,
		OperatorArgs:   opts.operatorArgs,
		DeferOperator:  opts.noOperator,
		Cluster:        localcluster.Options{Simulations: opts.simulations, ObjectStoreBinDir: storeBinDir},
	})
	if err != nil {
		return nil, err
	}
	return &environment{env}, nil
}

// startOwnEnvironment starts a cluster for one test alone, for what must
// not touch the shared ones (the simulation parts, more nodes, an operator
// stopped or restarted). It is stopped when the test ends, with the end of
// the operator's log printed if the test failed.
func startOwnEnvironment(t *testing.T, opts devenv.EnvironmentOptions) *environment {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	opts.RepoRoot, opts.Scheme, opts.OperatorBinary = repoRoot, scheme, operatorBinary
	started, err := devenv.StartEnvironment(ctx, opts)
	if err != nil {
		t.Fatalf("start a cluster of the test's own: %v", err)
	}
	e := &environment{started}
	t.Cleanup(func() {
		if t.Failed() {
			log := e.operator().LogPath
			t.Logf("the end of the operator's log (%s):\n%s", log, devenv.TailFile(log, 60))
		}
		e.Stop()
	})
	return e
}

// operator is the newest operator process.
func (e *environment) operator() *devenv.Operator {
	ops := e.Operators()
	return ops[len(ops)-1]
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
