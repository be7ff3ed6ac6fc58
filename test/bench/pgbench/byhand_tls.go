package pgbench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// handTLSConfiguration turns TLS on as the PostgresCluster's instances have
// it (TLS 1.3 at least), so that both sides encrypt every message: a
// careful administrator would not send passwords and rows in clear either.
// The standbys get the certificate with the data (pg_basebackup copies
// it), and stream over TLS (libpq's sslmode=prefer).
var handTLSConfiguration = []string{"ssl = on", "ssl_min_protocol_version = 'TLSv1.3'"}

// writeServerCertificate writes a self-signed certificate for localhost
// and its key into a data folder, as PostgreSQL's server.crt and
// server.key, owned by PostgreSQL's user (the key readable by it alone, as
// PostgreSQL requires).
func (h *handMade) writeServerCertificate(data string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate the hand-made server's key: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("sign the hand-made server's certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode the hand-made server's key: %w", err)
	}
	for _, f := range []struct {
		name, kind string
		der        []byte
	}{{"server.crt", "CERTIFICATE", der}, {"server.key", "EC PRIVATE KEY", keyDER}} {
		path := filepath.Join(data, f.name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if h.cred != nil {
			if err := os.Chown(path, int(h.cred.Uid), int(h.cred.Gid)); err != nil {
				return fmt.Errorf("give %s to PostgreSQL's user: %w", path, err)
			}
		}
	}
	return nil
}
