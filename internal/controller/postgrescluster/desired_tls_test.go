package postgrescluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/internal/pgspec"
)

var issued = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

// The CA and the server certificate: ECDSA P-256, the CA for ten years,
// the server for one, with the names of every instance the cluster can
// have and of its Services, and a chain that verifies for each name.
func TestServerCertificate(t *testing.T) {
	g := NewWithT(t)
	pg := testCluster()
	secrets, err := DesiredTLSSecrets(pg, "cluster.local", issued)
	g.Expect(err).NotTo(HaveOccurred())
	caSecret, server := secrets[0], secrets[1]
	g.Expect(caSecret.Name).To(Equal("db-ca"))
	g.Expect(caSecret.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(caSecret.Data).To(HaveKey("ca.key"))
	g.Expect(caSecret.OwnerReferences).To(HaveLen(1))
	g.Expect(server.Name).To(Equal("db-server"))
	g.Expect(server.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(server.Data).To(HaveKey("tls.key"))
	g.Expect(server.Data["ca.crt"]).To(Equal(caSecret.Data["ca.crt"]))
	g.Expect(server.Labels).To(Equal(clusterLabels(pg)))

	ca, err := parseCert(caSecret.Data["ca.crt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ca.IsCA).To(BeTrue())
	g.Expect(ca.NotAfter.Sub(issued)).To(Equal(caValidity))
	cert, err := parseCert(server.Data["tls.crt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cert.IsCA).To(BeFalse())
	g.Expect(cert.NotAfter.Sub(issued)).To(Equal(365 * 24 * time.Hour))
	g.Expect(cert.NotBefore).To(Equal(issued.Add(-backdate)))
	key, ok := cert.PublicKey.(*ecdsa.PublicKey)
	g.Expect(ok).To(BeTrue())
	g.Expect(key.Curve).To(Equal(elliptic.P256()))

	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, host := range []string{
		"db-1.db.shop.svc.cluster.local", "db-9.db.shop.svc.cluster.local", "db-3",
		"db-rw", "db-rw.shop", "db-rw.shop.svc", "db-rw.shop.svc.cluster.local",
		"db-ro.shop.svc.cluster.local", "db.shop.svc.cluster.local", "localhost",
	} {
		_, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: issued.Add(time.Hour),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		g.Expect(err).NotTo(HaveOccurred(), "host %s", host)
	}
	for _, host := range []string{"db-10.db.shop.svc.cluster.local", "other-rw.shop.svc.cluster.local", "db-rw.other.svc.cluster.local"} {
		_, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: issued.Add(time.Hour)})
		g.Expect(err).To(HaveOccurred(), "host %s", host)
	}
	g.Expect(cert.DNSNames).To(ConsistOf(pgspec.ServerHosts("db", "shop", "cluster.local")))
}

// The server certificate is issued again when less than a third of its
// validity is left, when its names are not the cluster's (another domain),
// when another CA signed it, and when it cannot be read.
func TestServerRenewal(t *testing.T) {
	pg := testCluster()
	hosts := pgspec.ServerHosts(pg.Name, pg.Namespace, "cluster.local")
	secrets, err := DesiredTLSSecrets(pg, "cluster.local", issued)
	if err != nil {
		t.Fatal(err)
	}
	ca, server := secrets[0].Data["ca.crt"], secrets[1]
	other, _ := DesiredTLSSecrets(pg, "cluster.local", issued)
	lifetime := serverValidity + backdate
	broken := server.DeepCopy()
	broken.Data["tls.crt"] = []byte("not a certificate")
	tests := map[string]struct {
		secret *corev1.Secret
		ca     []byte
		hosts  []string
		now    time.Time
		want   string
	}{
		"new":                              {server, ca, hosts, issued, ""},
		"just over a third left":           {server, ca, hosts, issued.Add(serverValidity - lifetime/3 - time.Minute), ""},
		"just under a third left":          {server, ca, hosts, issued.Add(serverValidity - lifetime/3 + time.Minute), "expires"},
		"expired":                          {server, ca, hosts, issued.Add(2 * serverValidity), "expires"},
		"names of another cluster domain":  {server, ca, pgspec.ServerHosts(pg.Name, pg.Namespace, "example.org"), issued, "DNS names"},
		"names in another order are equal": {server, ca, append(hosts[1:], hosts[0]), issued, ""},
		"signed by another CA":             {server, other[0].Data["ca.crt"], hosts, issued, "not signed"},
		"unreadable":                       {broken, ca, hosts, issued, "cannot be read"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := serverRenewal(tc.secret, tc.ca, tc.hosts, tc.now)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("serverRenewal = %q, want %q", got, tc.want)
			}
		})
	}
	cert, _ := parseCert(server.Data["tls.crt"])
	if want := cert.NotAfter.Add(-lifetime / 3); !renewAt(cert).Equal(want) {
		t.Errorf("renewAt = %s, want %s", renewAt(cert), want)
	}
}
