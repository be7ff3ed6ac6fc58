package reliability

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"example.com/platform-operator/internal/devenv"
)

// recordingProxy stands between one operator and the API server and notes
// every request it forwards, so that a test can tell what that operator
// sent: the API server's own view does not tell two replicas apart.
type recordingProxy struct {
	url string
	// ca is the PEM certificate the proxy serves with.
	ca []byte

	mu       sync.Mutex
	requests []proxiedRequest
}

type proxiedRequest struct {
	at           time.Time
	method, path string
}

// startRecordingProxy serves on loopback and forwards to the
// local cluster's API server over TLS; the operator's own token goes
// through untouched.
func startRecordingProxy(t *testing.T, env *devenv.Environment) *recordingProxy {
	t.Helper()
	target, err := url.Parse(env.Cluster.Server())
	if err != nil {
		t.Fatal(err)
	}
	// Only the cluster's CA: no credentials of the admin may leak into the
	// operator's requests.
	tlsConfig, err := rest.TLSConfigFor(rest.AnonymousClientConfig(env.Cluster.RESTConfig()))
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.Transport = &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}
	forward.FlushInterval = -1 // watches stream
	p := &recordingProxy{}
	// TLS, because client-go sends a kubeconfig's credentials only over
	// TLS; HTTP/2, as to an API server.
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, proxiedRequest{at: time.Now(), method: req.Method, path: req.URL.Path})
		p.mu.Unlock()
		forward.ServeHTTP(w, req)
	}))
	server.EnableHTTP2 = true
	server.StartTLS()
	p.url = server.URL
	p.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	t.Cleanup(func() {
		// Watches never end by themselves.
		server.CloseClientConnections()
		server.Close()
	})
	return p
}

// writesSince returns the requests that change state, forwarded at or after
// since.
func (p *recordingProxy) writesSince(since time.Time) []proxiedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var writes []proxiedRequest
	for _, r := range p.requests {
		switch r.method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if !r.at.Before(since) {
				writes = append(writes, r)
			}
		}
	}
	return writes
}

// kubeconfig writes a kubeconfig with a token of the operator's
// ServiceAccount that talks to the API server through the proxy.
func (p *recordingProxy) kubeconfig(t *testing.T, env *devenv.Environment, name string) string {
	t.Helper()
	path := serviceAccountKubeconfig(t, env, name)
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range config.Clusters {
		cluster.Server = p.url
		cluster.CertificateAuthority, cluster.CertificateAuthorityData = "", p.ca
	}
	proxied := filepath.Join(filepath.Dir(path), name+"-proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*config, proxied); err != nil {
		t.Fatal(err)
	}
	return proxied
}
