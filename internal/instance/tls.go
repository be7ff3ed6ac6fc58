package instance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// serverCert is the server certificate as last written into the socket
// directory: its three PEMs.
type serverCert struct {
	cert, key, ca []byte
}

func (c serverCert) equal(o serverCert) bool {
	return bytes.Equal(c.cert, o.cert) && bytes.Equal(c.key, o.key) && bytes.Equal(c.ca, o.ca)
}

// syncTLS reads the cluster's server certificate (CLUSTER-server, which the
// operator issues and renews) and writes it into the socket directory when
// it changed: the next settings then turn TLS on, and a running PostgreSQL
// is reloaded so that it serves the new certificate (PostgreSQL reads its
// ssl files again on SIGHUP). An instance whose Secret cannot be read keeps
// what it has, or what an earlier run of its manager wrote into the socket
// directory; one that never had it accepts no TCP connection until it has
// (Settings.RefuseTCPWithoutTLS).
func (m *Manager) syncTLS(ctx context.Context, pg *v1alpha1.PostgresCluster) {
	s := &corev1.Secret{}
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	name := pgspec.ServerSecret(pg.Name)
	if err := m.secrets.client.Get(readCtx, types.NamespacedName{Namespace: m.opts.Namespace, Name: name}, s); err != nil {
		m.log.V(1).Info("Server certificate not read", "secret", name, "error", err.Error())
		if m.tls == nil {
			m.loadWrittenTLS()
		}
		return
	}
	m.markAPI()
	got := serverCert{cert: s.Data[corev1.TLSCertKey], key: s.Data[corev1.TLSPrivateKeyKey], ca: s.Data[pgspec.CACertKey]}
	if len(got.cert) == 0 || len(got.key) == 0 || len(got.ca) == 0 {
		m.log.Info("Server certificate incomplete", "secret", name)
		return
	}
	if m.tls != nil && m.serverCert.equal(got) {
		return
	}
	files, err := m.pg.WriteTLS(got.cert, got.key, got.ca)
	if err != nil {
		m.log.Error(err, "Server certificate not written")
		return
	}
	renewed := m.tls != nil
	m.tls, m.serverCert = &files, got
	if renewed {
		m.log.Info("Server certificate renewed", "secret", name)
		// The paths are the same: the settings do not change, a reload
		// reads the files.
		m.applyChange(postgres.ReloadNeeded)
	}
}

// loadWrittenTLS takes the certificate an earlier run of the manager in
// this pod wrote into the socket directory, if it did: a manager restarted
// while the API server is out of reach serves TLS as before.
func (m *Manager) loadWrittenTLS() {
	files := m.pg.TLSFiles()
	var written serverCert
	for _, f := range []struct {
		path string
		into *[]byte
	}{{files.CertFile, &written.cert}, {files.KeyFile, &written.key}, {files.CAFile, &written.ca}} {
		data, err := os.ReadFile(f.path)
		if err != nil || len(data) == 0 {
			return
		}
		*f.into = data
	}
	m.tls, m.serverCert = &files, written
	m.log.Info("Server certificate taken from the socket directory: its Secret cannot be read", "path", files.CertFile)
}

// replicationTLS is how this instance's connections to another instance
// (streaming, clones, rewinds) use TLS: verified with the cluster's CA,
// host name included (verify-full: every instance's DNS name is in the
// certificate). Managers that tests run in their own process reach each
// other by IP address (Options.AddressOf), which no certificate names:
// they check the chain only (verify-ca). Without a certificate yet,
// libpq's default (prefer).
func (m *Manager) replicationTLS(c *postgres.ConnInfo) {
	if m.tls == nil {
		return
	}
	c.SSLMode, c.SSLRootCert = "verify-full", m.tls.CAFile
	if m.opts.AddressOf != nil {
		c.SSLMode = "verify-ca"
	}
}

// toolTLS makes a tool's connection verify the server with caCert (PEM):
// sslmode=verify-full and the certificate in a file of its own, which
// cleanup removes. The file goes next to the tool's binary (the tools
// volume: a pod's root is read-only), else into the working directory
// (the local cluster runs one binary for every pod, in a directory of its
// own), else the temporary directory. Without caCert the connection is
// left as it is.
func toolTLS(c *postgres.ConnInfo, caCert string) (cleanup func(), err error) {
	if caCert == "" {
		return func() {}, nil
	}
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	dirs = append(dirs, os.TempDir())
	var f *os.File
	for _, dir := range dirs {
		if f, err = os.CreateTemp(dir, ".ca-*.crt"); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("write the CA certificate: %w", err)
	}
	_, werr := f.WriteString(caCert)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("write the CA certificate: %w", werr)
	}
	c.SSLMode, c.SSLRootCert = "verify-full", f.Name()
	return func() { os.Remove(f.Name()) }, nil
}
