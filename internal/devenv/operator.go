package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/platform"
)

// The operator's identity, as deploy/base creates it.
const (
	OperatorNamespace      = platform.Namespace
	OperatorServiceAccount = platform.Name
)

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount namespace/name, with a token from the TokenRequest API, so
// that whoever uses it has exactly that ServiceAccount's rights.
func ServiceAccountKubeconfig(ctx context.Context, cluster *localcluster.Cluster, namespace, name, path string) error {
	clientset, err := kubernetes.NewForConfig(cluster.RESTConfig())
	if err != nil {
		return err
	}
	expiry := int64((24 * time.Hour).Seconds())
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, request, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return cluster.WriteKubeconfig(path, "system:serviceaccount:"+namespace+":"+name, token.Status.Token)
}

// Operator is a running operator process.
type Operator struct {
	cmd     *exec.Cmd
	LogPath string
	// MetricsURL and ProbesURL are set when an Environment started it.
	MetricsURL, ProbesURL string

	done chan struct{}
	mu   sync.Mutex
	err  error
}

// StartOperator runs the operator binary with the given kubeconfig and extra
// flags; its output goes to logPath.
func StartOperator(binary, kubeconfig, logPath string, args ...string) (*Operator, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("operator binary: %w (make build creates it)", err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Out of a cluster: no in-cluster variables may leak in from the caller.
	cmd.Env = append(os.Environ(), "KUBERNETES_SERVICE_HOST=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start operator: %w", err)
	}
	op := &Operator{cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		op.mu.Lock()
		op.err = err
		op.mu.Unlock()
		close(op.done)
	}()
	return op, nil
}

// PID is the operator's process ID.
func (o *Operator) PID() int { return o.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (o *Operator) Exited() (bool, error) {
	select {
	case <-o.done:
		o.mu.Lock()
		defer o.mu.Unlock()
		return true, o.err
	default:
		return false, nil
	}
}

// Done is closed when the process ends.
func (o *Operator) Done() <-chan struct{} { return o.done }

// Stop sends SIGTERM, waits up to grace for a clean exit, then kills.
func (o *Operator) Stop(grace time.Duration) error {
	if exited, err := o.Exited(); exited {
		return err
	}
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(grace):
		_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		<-o.done
	}
	_, err := o.Exited()
	return err
}

// Kill ends the process at once, as a crash or a lost node would.
func (o *Operator) Kill() {
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
	<-o.done
}
