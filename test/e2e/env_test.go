// Package e2e tests the operator end to end on the local cluster: the
// operator binary runs as a process with the token of its own
// ServiceAccount, installed from deploy/ as a user would install it, against
// a real control plane with kwok nodes.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/website-operator/api/v1"
	"example.com/website-operator/internal/devenv"
	"example.com/website-operator/internal/localcluster"
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
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(websitev1.AddToScheme(scheme))
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
	buildDir, err := os.MkdirTemp("", "website-operator-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(buildDir)
	operatorBinary = filepath.Join(buildDir, "website-operator")
	build := exec.Command("go", "build", "-o", operatorBinary, "./cmd/website-operator")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the operator: %v\n%s", err, out)
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
		fmt.Fprintf(os.Stderr, "the end of the operator's log (%s):\n%s\n", shared.operator.LogPath, tailFile(shared.operator.LogPath, 40))
	}
	shared.stop()
	return code
}

// environment is a local cluster with the operator installed.
type environment struct {
	cluster    *localcluster.Cluster
	client     client.Client
	clientset  kubernetes.Interface
	applier    *devenv.Applier
	operator   *devenv.Operator
	kubeconfig string // the operator's ServiceAccount kubeconfig
	metrics    string // https://127.0.0.1:PORT/metrics
	probes     string // http://127.0.0.1:PORT
}

type envOptions struct {
	// manifests to install before the operator starts (default: the
	// cluster-wide deploy/ files).
	manifests []string
	// operatorArgs replace the default --all-namespaces.
	operatorArgs []string
	// noOperator leaves the operator to the test.
	noOperator bool
	nodes      int
}

func newEnvironment(ctx context.Context, opts envOptions) (env *environment, err error) {
	cluster, err := localcluster.Start(ctx, localcluster.Options{Nodes: opts.nodes})
	if err != nil {
		return nil, err
	}
	env = &environment{cluster: cluster}
	defer func() {
		if err != nil {
			env.stop()
		}
	}()
	if env.client, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		return env, err
	}
	if env.clientset, err = kubernetes.NewForConfig(cluster.RESTConfig()); err != nil {
		return env, err
	}
	if env.applier, err = devenv.NewApplier(cluster.RESTConfig()); err != nil {
		return env, err
	}
	manifests := opts.manifests
	if manifests == nil {
		manifests = []string{"deploy/namespace.yaml", "deploy/crd.yaml", "deploy/rbac.yaml"}
	}
	for _, m := range manifests {
		if _, err := env.applier.ApplyPaths(ctx, filepath.Join(repoRoot, m)); err != nil {
			return env, err
		}
	}
	if opts.noOperator {
		return env, nil
	}
	args := opts.operatorArgs
	if args == nil {
		args = []string{"--all-namespaces"}
	}
	return env, env.startOperator(ctx, args...)
}

// startOperator runs the operator with the ServiceAccount of deploy/rbac.yaml
// and waits until it is ready.
func (e *environment) startOperator(ctx context.Context, args ...string) error {
	e.kubeconfig = filepath.Join(e.cluster.Dir(), "operator.kubeconfig")
	if err := devenv.ServiceAccountKubeconfig(ctx, e.cluster, devenv.OperatorNamespace, devenv.OperatorServiceAccount, e.kubeconfig); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	e.metrics = fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0])
	e.probes = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	args = append(args,
		"--leader-elect", "--leader-election-namespace="+devenv.OperatorNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--verbose")
	e.operator, err = devenv.StartOperator(operatorBinary, e.kubeconfig, filepath.Join(e.cluster.Dir(), "operator.log"), args...)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if exited, err := e.operator.Exited(); exited {
			return fmt.Errorf("the operator exited (%v):\n%s", err, tailFile(e.operator.LogPath, 20))
		}
		if httpStatus(ctx, e.probes+"/readyz", "") == 200 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the operator did not become ready within 60s:\n%s", tailFile(e.operator.LogPath, 20))
}

func (e *environment) stop() {
	if e.operator != nil {
		_ = e.operator.Stop(20 * time.Second)
	}
	_ = e.cluster.Stop()
}

// kubectl runs the kubectl built with the control plane as the admin.
func (e *environment) kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := e.cluster.Kubectl(ctx, args...).CombinedOutput()
	return string(out), err
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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

func itoa(i int) string { return strconv.Itoa(i) }
