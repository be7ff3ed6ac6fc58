package devenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/platform"
)

// DefaultManifests install the kustomization of deploy/ (the base and every
// component: namespace, CRDs, RBAC, admission policy) as kubectl apply -k
// would, but for the operator's own Deployment, PodDisruptionBudget and
// metrics Service: the environment runs the operator as a local process.
var DefaultManifests = []string{"deploy"}

// EnvironmentOptions configure StartEnvironment.
type EnvironmentOptions struct {
	// RepoRoot is where deploy/ is, relative to the working directory.
	RepoRoot string
	// Scheme of Client.
	Scheme *runtime.Scheme
	// Manifests to apply, relative to RepoRoot (default DefaultManifests),
	// with Applier.ApplyPaths.
	Manifests []string
	// Components, when not nil and Manifests is nil, installs deploy/base
	// and only these components of deploy/components (such as "website")
	// instead of DefaultManifests.
	Components []string
	// OperatorBinary is started with OperatorArgs (default
	// --all-namespaces) once the manifests are applied, unless
	// DeferOperator is set; StartOperator starts more.
	OperatorBinary string
	OperatorArgs   []string
	DeferOperator  bool
	// OperatorLogDir receives the operators' logs (default: the cluster's
	// state folder, which a temporary cluster removes when it stops).
	OperatorLogDir string
	// Cluster options; BinDir defaults to $KUBE_BIN_DIR, InstanceBinary
	// to OperatorBinary: with the simulations on, PostgresCluster pods run
	// the operator's instance manager.
	Cluster localcluster.Options
}

// Environment is a local cluster with the operator installed from deploy/.
type Environment struct {
	Cluster   *localcluster.Cluster
	Client    client.Client
	Clientset kubernetes.Interface
	Applier   *Applier

	opts EnvironmentOptions

	mu        sync.Mutex
	operators []*Operator
}

// StartEnvironment starts a cluster, applies the manifests and, if asked,
// runs the operator until it is ready. On error it stops what it started.
func StartEnvironment(ctx context.Context, opts EnvironmentOptions) (env *Environment, err error) {
	if opts.Cluster.InstanceBinary == "" {
		opts.Cluster.InstanceBinary = opts.OperatorBinary
	}
	cluster, err := localcluster.Start(ctx, opts.Cluster)
	if err != nil {
		return nil, err
	}
	env = &Environment{Cluster: cluster, opts: opts}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()
	if env.Client, err = client.New(cluster.RESTConfig(), client.Options{Scheme: opts.Scheme}); err != nil {
		return env, err
	}
	if env.Clientset, err = kubernetes.NewForConfig(cluster.RESTConfig()); err != nil {
		return env, err
	}
	if env.Applier, err = NewApplier(cluster.RESTConfig()); err != nil {
		return env, err
	}
	if err := env.install(ctx); err != nil {
		return env, err
	}
	if opts.OperatorBinary == "" || opts.DeferOperator {
		return env, nil
	}
	args := opts.OperatorArgs
	if args == nil {
		args = []string{"--all-namespaces"}
	}
	_, err = env.StartOperator(ctx, args...)
	return env, err
}

// StartOperator runs one more operator process, as the ServiceAccount of
// deploy/, with leader election, its own metrics and probe ports,
// and args; it returns once the process answers /readyz. Its log is
// operator-INDEX.log in OperatorLogDir.
func (e *Environment) StartOperator(ctx context.Context, args ...string) (*Operator, error) {
	e.mu.Lock()
	index := len(e.operators)
	e.mu.Unlock()
	kubeconfig := filepath.Join(e.Cluster.Dir(), fmt.Sprintf("operator-%d.kubeconfig", index))
	if err := ServiceAccountKubeconfig(ctx, e.Cluster, OperatorNamespace, OperatorServiceAccount, kubeconfig); err != nil {
		return nil, err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	args = append(args,
		"--leader-elect", "--leader-election-namespace="+OperatorNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]))
	logDir := e.opts.OperatorLogDir
	if logDir == "" {
		logDir = e.Cluster.Dir()
	}
	op, err := StartOperator(e.opts.OperatorBinary, kubeconfig, filepath.Join(logDir, fmt.Sprintf("operator-%d.log", index)), args...)
	if err != nil {
		return nil, err
	}
	op.MetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0])
	op.ProbesURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	e.mu.Lock()
	e.operators = append(e.operators, op)
	e.mu.Unlock()
	return op, op.WaitReady(ctx, time.Minute)
}

// Operators are the operator processes started so far, oldest first.
func (e *Environment) Operators() []*Operator {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Operator(nil), e.operators...)
}

// Stop ends the operators, then the cluster.
func (e *Environment) Stop() {
	for _, op := range e.Operators() {
		_ = op.Stop(20 * time.Second)
	}
	_ = e.Cluster.Stop()
}

// Kubectl runs the kubectl built with the control plane as the admin.
func (e *Environment) Kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := e.Cluster.Kubectl(ctx, args...).CombinedOutput()
	return string(out), err
}

// WaitReady waits until the operator answers /readyz, failing early with
// the end of its log when it exits.
func (o *Operator) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if exited, err := o.Exited(); exited {
			return fmt.Errorf("the operator exited (%v):\n%s", err, TailFile(o.LogPath, 20))
		}
		if status, _ := HTTPGet(ctx, o.ProbesURL+"/readyz", ""); status == http.StatusOK {
			return nil
		}
		// Often enough for the benchmarks to time a restart.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("the operator did not become ready within %s:\n%s", timeout, TailFile(o.LogPath, 20))
}

// BuildOperator builds the operator binary from repoRoot into dir.
func BuildOperator(repoRoot, dir string) (string, error) {
	binary := filepath.Join(dir, platform.Name)
	build := exec.Command("go", "build", "-o", binary, "./cmd/platform-operator")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the operator: %w\n%s", err, out)
	}
	return binary, nil
}

// BuildPlugin builds the kubectl plugin, kubectl-platform, from repoRoot
// into dir.
func BuildPlugin(repoRoot, dir string) (string, error) {
	binary := filepath.Join(dir, "kubectl-platform")
	build := exec.Command("go", "build", "-o", binary, "./cmd/kubectl-platform")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the kubectl plugin: %w\n%s", err, out)
	}
	return binary, nil
}

// FreePorts finds n distinct free TCP ports on loopback.
func FreePorts(n int) ([]int, error) {
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

// TailFile returns the last n lines of a file.
func TailFile(path string, n int) string {
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
