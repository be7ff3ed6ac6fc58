package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
	"example.com/platform-operator/internal/localcluster"
)

// A PostgresCluster speaks TLS only: a client without TLS is refused
// (hostssl), a client with the cluster's CA from the application's Secret
// connects and verifies the chain, and the standbys stream over TLS
// (pg_stat_ssl on the primary).
//
// The simulation's Service addresses are loopback IPs, which no
// certificate names: pgx checks the chain (verify-ca), and psql, as make
// run prints it, the name too (verify-full), connecting to the IP as
// localhost (hostaddr), which the certificate names. The instances verify
// each other by their DNS names.
func TestPostgresClusterTLS(t *testing.T) {
	t.Parallel()
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "db", 2, 0, func(pg *v1alpha1.PostgresCluster) { pg.Spec.SuperuserAccess = true })
	env.waitPostgresReady(t, ns, "db", 2)
	g := NewWithT(t)

	app := env.appSecret(g, ns, "db")
	g.Expect(app["ca.crt"]).To(HavePrefix("-----BEGIN CERTIFICATE-----"), "the application's Secret carries the CA")
	g.Expect(app["uri"]).To(HaveSuffix("?sslmode=verify-full"))
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(caFile, []byte(app["ca.crt"]), 0o600)).To(Succeed())

	host, port := env.serviceAddress(g, ns, "db-rw")
	connect := func(mode, user, password, rootCert string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, err := postgres.Connect(ctx, postgres.ConnInfo{Host: host, Port: port, User: user, Password: password, DBName: "postgres",
			SSLMode: mode, SSLRootCert: rootCert})
		if err == nil {
			conn.Close(context.Background())
		}
		return err
	}
	NewWithT(t).Eventually(func() error { return connect("verify-ca", "app", app["password"], caFile) }).
		WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "with the CA, verified")
	// What make run prints, with psql: the server's name verified too
	// (verify-full), against localhost, which its certificate names.
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "db-rw"}, svc)).To(Succeed())
	conn, err := localcluster.PostgresClientConnString(svc.Annotations[localcluster.SimulationAddressAnnotation], "app", "app", caFile)
	g.Expect(err).NotTo(HaveOccurred())
	psql := exec.CommandContext(t.Context(), filepath.Join(postgrestest.BinDir(t), "psql"), conn, "-tAc", "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
	psql.Env = append(os.Environ(), "PGPASSWORD="+app["password"])
	out, err := psql.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "psql %s: %s", conn, out)
	g.Expect(strings.TrimSpace(string(out))).To(Equal("t"), "psql's session is encrypted")

	err = connect("disable", "app", app["password"], "")
	g.Expect(err).To(HaveOccurred(), "without TLS")
	g.Expect(err.Error()).To(ContainSubstring("no encryption"), "refused by pg_hba, not by the password")
	other := filepath.Join(t.TempDir(), "other.crt")
	g.Expect(os.WriteFile(other, otherCA(t), 0o600)).To(Succeed())
	g.Expect(connect("verify-ca", "app", app["password"], other)).NotTo(Succeed(), "a server the CA did not sign")

	// The standby's replication connection, seen on the primary.
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "db-superuser"}, secret)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		conn, err := postgres.Connect(t.Context(), postgres.ConnInfo{Host: host, Port: port, User: "postgres", Password: string(secret.Data["password"]),
			DBName: "postgres", SSLMode: "verify-ca", SSLRootCert: caFile})
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(context.Background())
		var name, version string
		var ssl bool
		g.Expect(conn.QueryRow(t.Context(), `SELECT r.application_name, s.ssl, coalesce(s.version, '')
			FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE r.application_name = 'db-2'`).Scan(&name, &ssl, &version)).To(Succeed())
		g.Expect(ssl).To(BeTrue(), "the standby streams over TLS")
		g.Expect(version).To(Equal("TLSv1.3"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	// The standby verifies its primary by name: its primary_conninfo says
	// so, and it streams (above).
	roHost, roPort := env.serviceAddress(g, ns, "db-ro")
	NewWithT(t).Eventually(func(g Gomega) {
		// Eventually: CLUSTER-ro may route a moment after the replica is
		// ready, as for any client of a Service.
		conn, err := postgres.Connect(t.Context(), postgres.ConnInfo{Host: roHost, Port: roPort, User: "postgres", Password: string(secret.Data["password"]),
			DBName: "postgres", SSLMode: "verify-ca", SSLRootCert: caFile})
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(context.Background())
		var conninfo string
		g.Expect(conn.QueryRow(t.Context(), "SHOW primary_conninfo").Scan(&conninfo)).To(Succeed())
		g.Expect(conninfo).To(ContainSubstring("sslmode='verify-full'"))
		g.Expect(conninfo).To(ContainSubstring("host='db-1.db." + ns + ".svc."))
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// otherCA is a CA that signed nothing of the cluster's, PEM.
func otherCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
