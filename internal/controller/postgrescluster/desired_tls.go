package postgrescluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// Lifetimes of the certificates the operator issues. The CA is made once
// and outlives any cluster's expected life; the server certificate is
// renewed well before it expires (serverRenewal).
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 365 * 24 * time.Hour
	// backdate starts a certificate's validity before its issue, so that
	// a node whose clock is behind the operator's accepts it.
	backdate = time.Hour
)

// keyPair is a certificate and its private key, PEM.
type keyPair struct {
	cert, key []byte
}

// newCA makes a self-signed CA for cluster: ECDSA P-256, valid for
// caValidity from now.
func newCA(cluster string, now time.Time) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate the CA's key: %w", err)
	}
	template, err := certTemplate(now, caValidity)
	if err != nil {
		return keyPair{}, err
	}
	template.Subject = pkix.Name{CommonName: cluster + " CA", OrganizationalUnit: []string{"platform-operator"}}
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.MaxPathLenZero = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign the CA: %w", err)
	}
	return encodePair(der, key)
}

// newServerCert makes a server certificate for hosts (its DNS names, the
// first its common name), signed by ca, valid for serverValidity from now.
func newServerCert(ca keyPair, hosts []string, now time.Time) (keyPair, error) {
	caCert, caKey, err := parsePair(ca)
	if err != nil {
		return keyPair{}, fmt.Errorf("the CA: %w", err)
	}
	if len(hosts) == 0 {
		return keyPair{}, errors.New("a server certificate needs a host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate the server's key: %w", err)
	}
	template, err := certTemplate(now, serverValidity)
	if err != nil {
		return keyPair{}, err
	}
	template.Subject = pkix.Name{CommonName: hosts[0]}
	template.DNSNames = slices.Clone(hosts)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign the server certificate: %w", err)
	}
	return encodePair(der, key)
}

// certTemplate is a certificate valid from now-backdate to now+validity,
// with a random serial number.
func certTemplate(now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate a serial number: %w", err)
	}
	return &x509.Certificate{SerialNumber: serial, NotBefore: now.Add(-backdate), NotAfter: now.Add(validity)}, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("encode a key: %w", err)
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseCert reads the first certificate of a PEM.
func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// parsePair reads a CA's certificate and its ECDSA key.
func parsePair(p keyPair) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := parseCert(p.cert)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(p.key)
	if block == nil {
		return nil, nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("the key is not the certificate's")
	}
	return cert, key, nil
}

// serverRenewal says why the server certificate of a Secret must be
// issued again, "" when it need not: when it cannot be read, is not
// signed by ca, does not cover exactly hosts, or has less than a third of
// its validity left at now.
func serverRenewal(secret *corev1.Secret, ca []byte, hosts []string, now time.Time) string {
	cert, err := parseCert(secret.Data[corev1.TLSCertKey])
	if err != nil {
		return "its certificate cannot be read: " + err.Error()
	}
	if len(secret.Data[corev1.TLSPrivateKeyKey]) == 0 {
		return "it has no key"
	}
	caCert, err := parseCert(ca)
	if err != nil {
		return "the CA cannot be read: " + err.Error()
	}
	if err := cert.CheckSignatureFrom(caCert); err != nil || string(secret.Data[pgspec.CACertKey]) != string(ca) {
		return "it is not signed by the cluster's CA"
	}
	if !sameSet(cert.DNSNames, hosts) {
		return "its DNS names are not the cluster's"
	}
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	if left := cert.NotAfter.Sub(now); left < lifetime/3 {
		return fmt.Sprintf("it expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// renewAt is when serverRenewal will ask for a new certificate by time
// alone: a third of its validity before it ends.
func renewAt(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// DesiredCASecret is the cluster's CA Secret (Opaque: ca.crt, ca.key),
// which only the operator reads.
func DesiredCASecret(pg *v1alpha1.PostgresCluster, ca keyPair) *corev1.Secret {
	s := ownedSecret(pg, pgspec.CASecret(pg.Name), corev1.SecretTypeOpaque)
	s.Data = map[string][]byte{pgspec.CACertKey: ca.cert, pgspec.CAKeyKey: ca.key}
	return s
}

// DesiredServerSecret is the instances' server certificate Secret
// (kubernetes.io/tls, with the CA's certificate as ca.crt), which the
// instance managers read.
func DesiredServerSecret(pg *v1alpha1.PostgresCluster, server keyPair, ca []byte) *corev1.Secret {
	s := ownedSecret(pg, pgspec.ServerSecret(pg.Name), corev1.SecretTypeTLS)
	s.Data = map[string][]byte{corev1.TLSCertKey: server.cert, corev1.TLSPrivateKeyKey: server.key, pgspec.CACertKey: ca}
	return s
}

func ownedSecret(pg *v1alpha1.PostgresCluster, name string, typ corev1.SecretType) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pg.Namespace, Labels: clusterLabels(pg),
			OwnerReferences: []metav1.OwnerReference{controllerReference(pg)},
		},
		Type: typ,
	}
}

// DesiredTLSSecrets are a new CA of pg and its server certificate, as
// ensureTLS makes them for a new cluster.
func DesiredTLSSecrets(pg *v1alpha1.PostgresCluster, clusterDomain string, now time.Time) ([]*corev1.Secret, error) {
	ca, err := newCA(pg.Name, now)
	if err != nil {
		return nil, err
	}
	server, err := newServerCert(ca, pgspec.ServerHosts(pg.Name, pg.Namespace, clusterDomain), now)
	if err != nil {
		return nil, err
	}
	return []*corev1.Secret{DesiredCASecret(pg, ca), DesiredServerSecret(pg, server, ca.cert)}, nil
}
