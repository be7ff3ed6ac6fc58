package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// Issue 52, finding 5: the server certificate is rotated before it
// expires, and the running instances serve the new one without a restart.
// The test puts into CLUSTER-server a certificate the cluster's CA signed
// for the cluster's names that has an hour of its eleven left, as a
// certificate near its end would be; the operator issues a new one
// (CertificateRenewed), every instance serves it on its next TLS
// handshake, PostgreSQL was reloaded, not restarted, and the standby still
// streams over TLS. Then the user brings a certificate of a CA of theirs
// (spec.tls.serverCertSecret, cert-manager's format): one that does not
// cover the Services is refused, naming them, and not served; one that
// does is served by every instance, reloaded, the application Secret's
// ca.crt becomes that CA, and the standby streams verifying the primary
// with it.
func TestPostgresClusterServerCertificates(t *testing.T) {
	t.Parallel()
	env, ns := pgNamespace(t)
	const cluster = "rot"
	env.newPostgresCluster(t, ns, cluster, 2, 0, nil)
	pg := env.waitPostgresReady(t, ns, cluster, 2)
	g := NewWithT(t)
	instances := []string{cluster + "-1", cluster + "-2"}

	app := env.appSecret(g, ns, cluster)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(caFile, []byte(app["ca.crt"]), 0o600)).To(Succeed())
	server := env.secret(g, ns, pgspec.ServerSecret(cluster))
	issued := parseCertPEM(g, server.Data[corev1.TLSCertKey])
	startedAt := map[string]time.Time{}
	for _, pod := range instances {
		g.Eventually(func() (string, error) { return servedSerial(ns, pod, env, app["password"], caFile) }).
			WithTimeout(30*time.Second).WithPolling(time.Second).Should(Equal(issued.SerialNumber.String()), "%s serves the issued certificate", pod)
		startedAt[pod] = postmasterStart(g, env, ns, pod)
	}

	ca := env.secret(g, ns, pgspec.CASecret(cluster))
	ending := certificateEndingSoon(g, ca.Data[pgspec.CACertKey], ca.Data[pgspec.CAKeyKey], issued.DNSNames)
	g.Eventually(func(g Gomega) {
		server := env.secret(g, ns, pgspec.ServerSecret(cluster))
		server.Data[corev1.TLSCertKey], server.Data[corev1.TLSPrivateKeyKey] = ending.cert, ending.key
		g.Expect(env.Client.Update(t.Context(), server)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	replaced := time.Now()

	var renewed *x509.Certificate
	g.Eventually(func(g Gomega) {
		cert := parseCertPEM(g, env.secret(g, ns, pgspec.ServerSecret(cluster)).Data[corev1.TLSCertKey])
		g.Expect(cert.SerialNumber).NotTo(BeElementOf(issued.SerialNumber, ending.serial), "a certificate issued again")
		g.Expect(time.Until(cert.NotAfter)).To(BeNumerically(">", 300*24*time.Hour))
		renewed = cert
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "PostgresCluster" && ev.Regarding.Name == cluster && ev.Reason == "CertificateRenewed" {
				notes = append(notes, ev.Note)
			}
		}
		return notes
	}).WithTimeout(10*time.Second).Should(ContainElement(ContainSubstring("it expires at")), "a CertificateRenewed event saying why")

	for _, pod := range instances {
		g.Eventually(func() (string, error) { return servedSerial(ns, pod, env, app["password"], caFile) }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(renewed.SerialNumber.String()), "%s serves the renewed certificate", pod)
		g.Expect(postmasterStart(g, env, ns, pod)).To(Equal(startedAt[pod]), "%s's PostgreSQL was reloaded, not restarted", pod)
	}
	t.Logf("every instance served the renewed certificate %s after the one ending soon was put in place",
		time.Since(replaced).Round(100*time.Millisecond))
	g.Eventually(func() (bool, error) { return env.streamsOverTLS(ns, pg.Status.CurrentPrimary) }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "the standby streams over TLS")

	t.Run("a certificate the user brings", func(t *testing.T) {
		testUserCertificate(t, env, ns, cluster, instances, issued.DNSNames, startedAt)
	})
}

// testUserCertificate brings cluster a server certificate of another CA,
// for hosts (every name the operator's certificate covers): first one
// without the Services' names, which is refused and not served, then one
// with them.
func testUserCertificate(t *testing.T, env *environment, ns, cluster string, instances, hosts []string, startedAt map[string]time.Time) {
	g := NewWithT(t)
	ctx := t.Context()
	corporate := newTestCA(g, "corporate")
	var instanceHosts []string
	for _, h := range hosts {
		if strings.HasPrefix(h, cluster+"-") && !strings.HasPrefix(h, cluster+"-r") {
			instanceHosts = append(instanceHosts, h)
		}
	}
	full := issueServerCertificate(g, corporate, hosts, time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	partial := issueServerCertificate(g, corporate, instanceHosts, time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	for name, cert := range map[string]endingCertificate{"corporate-partial": partial, "corporate": full} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert.cert, corev1.TLSPrivateKeyKey: cert.key, pgspec.CACertKey: corporate.cert}})).To(Succeed())
	}
	bring := func(secret string) {
		g.Eventually(func(g Gomega) {
			pg := env.postgresCluster(g, ns, cluster)
			pg.Spec.TLS = &v1alpha1.PostgresTLS{ServerCertSecret: secret}
			g.Expect(env.Client.Update(ctx, pg)).To(Succeed())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	before := env.secret(g, ns, pgspec.ServerSecret(cluster)).Data[corev1.TLSCertKey]

	bring("corporate-partial")
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(env.postgresCluster(g, ns, cluster).Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresCertificateInvalidReason), c.Message)
		g.Expect(c.Message).To(ContainSubstring("does not cover " + cluster + "-rw." + ns + ".svc"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "Degraded, naming the hosts the certificate misses")
	g.Expect(env.secret(g, ns, pgspec.ServerSecret(cluster)).Data[corev1.TLSCertKey]).To(Equal(before), "the certificate served is kept")

	bring("corporate")
	caFile := filepath.Join(t.TempDir(), "corporate.crt")
	g.Expect(os.WriteFile(caFile, corporate.cert, 0o600)).To(Succeed())
	password := env.appSecret(g, ns, cluster)["password"]
	for _, pod := range instances {
		g.Eventually(func() (string, error) { return servedSerial(ns, pod, env, password, caFile) }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(full.serial.String()), "%s serves the user's certificate", pod)
		g.Expect(postmasterStart(g, env, ns, pod)).To(Equal(startedAt[pod]), "%s's PostgreSQL was reloaded, not restarted", pod)
	}
	g.Eventually(func(g Gomega) string { return env.appSecret(g, ns, cluster)["ca.crt"] }).WithTimeout(30*time.Second).
		Should(Equal(string(corporate.cert)), "the application Secret's ca.crt is the user's CA")
	g.Eventually(func(g Gomega) string {
		served := env.postgresCluster(g, ns, cluster).Status.TLS
		g.Expect(served).NotTo(BeNil())
		return served.Issuer
	}).WithTimeout(30*time.Second).Should(Equal("corporate"), "the status names the CA of the certificate served")
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(env.postgresCluster(g, ns, cluster).Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "no longer Degraded")
	// The standby's stream began before: ended, it starts again, and the
	// standby verifies the primary with the user's CA.
	primary := env.postgresCluster(g, ns, cluster).Status.CurrentPrimary
	func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		conn, err := env.superuserOverSocket(ctx, ns, primary)
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(context.Background())
		var ended int
		g.Expect(conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_replication").Scan(&ended)).To(Succeed())
		g.Expect(ended).To(Equal(1), "the standby's stream ended")
	}()
	g.Eventually(func() (bool, error) { return env.streamsOverTLS(ns, primary) }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "the standby streams again, verifying the primary with the user's CA")
}

// servedSerial is the serial number of the certificate that pod's
// PostgreSQL presents in a TLS handshake now, the chain checked with the
// CA in caFile (verify-ca: the pod's address is in no certificate).
func servedSerial(ns, pod string, env *environment, password, caFile string) (string, error) {
	address, err := env.Cluster.PostgresAddress(ns, pod)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := postgres.Connect(ctx, postgres.ConnInfo{Host: address, Port: pgspec.Port, User: "app", Password: password, DBName: "app",
		SSLMode: "verify-ca", SSLRootCert: caFile})
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	tlsConn, ok := conn.PgConn().Conn().(*tls.Conn)
	if !ok {
		return "", fmt.Errorf("the connection to %s is not TLS", pod)
	}
	peers := tlsConn.ConnectionState().PeerCertificates
	if len(peers) == 0 {
		return "", fmt.Errorf("%s presented no certificate", pod)
	}
	return peers[0].SerialNumber.String(), nil
}

// postmasterStart is when pod's PostgreSQL started, asked through its
// socket: a reload keeps it, a restart changes it.
func postmasterStart(g Gomega, env *environment, ns, pod string) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := env.superuserOverSocket(ctx, ns, pod)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close(context.Background())
	var started time.Time
	g.Expect(conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&started)).To(Succeed())
	return started
}

// streamsOverTLS tells whether every WAL sender of primary streams to a
// standby over TLS, and there is one.
func (e *environment) streamsOverTLS(ns, primary string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := e.superuserOverSocket(ctx, ns, primary)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var streaming, encrypted int
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE s.ssl)
		FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE r.state = 'streaming'`).Scan(&streaming, &encrypted)
	return streaming > 0 && streaming == encrypted, err
}

func (e *environment) secret(g Gomega, ns, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(e.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s)).To(Succeed())
	return s
}

func parseCertPEM(g Gomega, data []byte) *x509.Certificate {
	block, _ := pem.Decode(data)
	g.Expect(block).NotTo(BeNil(), "a PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// endingCertificate is a server certificate and its key, PEM.
type endingCertificate struct {
	cert, key []byte
	serial    *big.Int
}

// certificateEndingSoon is a server certificate for hosts, signed by the
// CA (PEM certificate and EC key), that began ten hours ago and ends in
// one: less than a third of its life is left, and it is otherwise valid.
func certificateEndingSoon(g Gomega, caCertPEM, caKeyPEM []byte, hosts []string) endingCertificate {
	now := time.Now()
	return issueServerCertificate(g, testCA{cert: caCertPEM, key: caKeyPEM}, hosts, now.Add(-10*time.Hour), now.Add(time.Hour))
}

// testCA is a CA's certificate and EC key, PEM.
type testCA struct{ cert, key []byte }

// newTestCA is a self-signed CA, as an organisation's PKI would have.
func newTestCA(g Gomega, name string) testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	return testCA{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
}

// issueServerCertificate is a server certificate for hosts, signed by ca,
// valid from notBefore to notAfter.
func issueServerCertificate(g Gomega, ca testCA, hosts []string, notBefore, notAfter time.Time) endingCertificate {
	caCert := parseCertPEM(g, ca.cert)
	block, _ := pem.Decode(ca.key)
	g.Expect(block).NotTo(BeNil(), "the CA's PEM key")
	caKey, err := x509.ParseECPrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	g.Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	return endingCertificate{
		cert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		serial: serial,
	}
}
