package localcluster

// SIMULATION: how a simulated PostgreSQL pod reaches the API server. See
// simulation_postgres.go.
//
// The API server listens on loopback, which a network namespace does not
// share; a TCP proxy on the bridge's host address forwards to it, so that
// cutting a pod's veth also cuts it off from the API server. Each instance
// manager gets a kubeconfig for that address, with a token of its pod's own
// ServiceAccount bound to the pod, renewed before it expires, as a kubelet
// does for a projected ServiceAccount token.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// apiServerTLSName is a name of the API server's certificate (see
	// certs.go), which the address of the proxy is not.
	apiServerTLSName = "kubernetes.default.svc"
	// instanceTokenSeconds is the lifetime of the instance managers'
	// tokens; they are renewed once 80% of it has passed.
	instanceTokenSeconds = 3600
)

// instanceToken is a pod's current token.
type instanceToken struct {
	renewAt time.Time
}

// requestPodToken asks the TokenRequest API for a token of pod's
// ServiceAccount, bound to the pod: it stops working when the pod is gone.
func requestPodToken(ctx context.Context, cl client.Client, pod *corev1.Pod) (string, instanceToken, error) {
	name := pod.Spec.ServiceAccountName
	if name == "" {
		name = "default"
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name}}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](instanceTokenSeconds),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	issued := time.Now()
	if err := cl.SubResource("token").Create(ctx, sa, request); err != nil {
		return "", instanceToken{}, fmt.Errorf("request a token of ServiceAccount %s/%s for pod %s: %w", pod.Namespace, name, pod.Name, err)
	}
	lifetime := request.Status.ExpirationTimestamp.Sub(issued)
	return request.Status.Token, instanceToken{renewAt: issued.Add(lifetime * 8 / 10)}, nil
}

// writeInstanceKubeconfig writes, for the postgres user, a kubeconfig that
// reaches the API server at server (the proxy) and reads its token from
// tokenFile, which client-go reads again when it changes.
func writeInstanceKubeconfig(path, server, caFile, tokenFile, user, namespace string, owner fileOwner) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, TLSServerName: apiServerTLSName}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: namespace}
	config.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return owner.chown(path)
}

// writeOwnedFile replaces path with data, owned by owner and readable by
// it alone, through a rename: readers see the old or the new content.
func writeOwnedFile(path string, data []byte, owner fileOwner) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := owner.chown(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// fileOwner is the user that the instance managers run as.
type fileOwner struct {
	name     string
	uid, gid int
}

func (o fileOwner) chown(path string) error {
	if err := os.Chown(path, o.uid, o.gid); err != nil {
		return fmt.Errorf("give %s to %s: %w", path, o.name, err)
	}
	return nil
}

// mkdir makes path (mode 0700) and gives it to o.
func (o fileOwner) mkdir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o700); err != nil {
		return err
	}
	return o.chown(path)
}
