package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	process *localcluster.Process
	LogPath string
	// MetricsURL and ProbesURL are set when an Environment started it.
	MetricsURL, ProbesURL string
}

// StartOperator runs the operator binary with the given kubeconfig and extra
// flags; its output goes to logPath. It runs as the cluster's components do
// (localcluster.Process): in its own process group, killed if the caller
// dies.
func StartOperator(binary, kubeconfig, logPath string, args ...string) (*Operator, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("operator binary: %w (make build creates it)", err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	process := localcluster.NewProcess(platform.Name, binary, logPath, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	// Out of a cluster: no in-cluster variables may leak in from the caller.
	process.Env = append(os.Environ(), "KUBERNETES_SERVICE_HOST=")
	if err := process.Start(); err != nil {
		return nil, err
	}
	return &Operator{process: process, LogPath: logPath}, nil
}

// PID is the operator's process ID, or 0 once it has exited.
func (o *Operator) PID() int { return o.process.PID() }

// Exited reports whether the process has ended, and how.
func (o *Operator) Exited() (bool, error) { return o.process.Exited() }

// Done is closed when the process ends.
func (o *Operator) Done() <-chan struct{} { return o.process.Done() }

// Stop sends SIGTERM, waits up to grace for a clean exit, then kills. It
// returns how the process exited.
func (o *Operator) Stop(grace time.Duration) error {
	o.process.StopGrace = grace
	o.process.Stop()
	_, err := o.process.Exited()
	return err
}

// Kill ends the process at once, as a crash or a lost node would.
func (o *Operator) Kill() { o.process.Kill() }
