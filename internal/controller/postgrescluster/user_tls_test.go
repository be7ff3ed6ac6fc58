package postgrescluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/internal/pgspec"
)

// A certificate the user brings is served only when it is whole, valid
// now, chains to its own ca.crt and covers every host the instances and
// the applications verify: else the status says which of these it fails.
func TestUserCertificateProblem(t *testing.T) {
	g := NewWithT(t)
	pg := testCluster()
	hosts := requiredServerHosts(pg, "cluster.local")
	g.Expect(hosts).To(Equal([]string{
		"db-1.db.shop.svc.cluster.local", "db-2.db.shop.svc.cluster.local", "db-3.db.shop.svc.cluster.local",
		"db-rw.shop.svc.cluster.local", "db-ro.shop.svc.cluster.local",
	}))
	ca, err := newCA("corporate", issued)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := newCA("another", issued)
	g.Expect(err).NotTo(HaveOccurred())
	server := func(signer keyPair, names ...string) keyPair {
		p, err := newServerCert(signer, names, issued)
		g.Expect(err).NotTo(HaveOccurred())
		return p
	}
	exact := server(ca, hosts...)
	wildcard := server(ca, "*.db.shop.svc.cluster.local", "*.shop.svc.cluster.local")
	secret := func(cert, key, caCert []byte) *corev1.Secret {
		data := map[string][]byte{}
		for k, v := range map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key, pgspec.CACertKey: caCert} {
			if v != nil {
				data[k] = v
			}
		}
		return &corev1.Secret{Data: data}
	}
	now := issued.Add(24 * time.Hour)
	tests := []struct {
		name   string
		secret *corev1.Secret
		at     time.Time
		want   string
	}{
		{"its names", secret(exact.cert, exact.key, ca.cert), now, ""},
		{"wildcards", secret(wildcard.cert, wildcard.key, ca.cert), now, ""},
		{"no ca.crt", secret(exact.cert, exact.key, nil), now, "it has no ca.crt key"},
		{"no tls.key", secret(exact.cert, nil, ca.cert), now, "it has no tls.key key"},
		{"another certificate's key", secret(exact.cert, wildcard.key, ca.cert), now, "its tls.crt and tls.key are not a certificate and its key"},
		{"ca.crt not PEM", secret(exact.cert, exact.key, []byte("corporate")), now, "its ca.crt holds no PEM certificate"},
		{"another CA's certificate", func() *corev1.Secret { p := server(other, hosts...); return secret(p.cert, p.key, ca.cert) }(), now,
			"its certificate does not chain to its ca.crt for server authentication"},
		{"ended", secret(exact.cert, exact.key, ca.cert), issued.Add(serverValidity + time.Minute), "its certificate ended at 2027-12-07T06:00:00Z"},
		{"not yet valid", secret(exact.cert, exact.key, ca.cert), issued.Add(-2 * backdate), "its certificate is valid only from 2026-12-07T05:00:00Z"},
		{"an instance missing", func() *corev1.Secret {
			p := server(ca, append(hosts[:2:2], hosts[3:]...)...)
			return secret(p.cert, p.key, ca.cert)
		}(), now,
			"its certificate does not cover db-3.db.shop.svc.cluster.local (it names db-1.db"},
		{"the Services' short names only", func() *corev1.Secret {
			p := server(ca, "*.db.shop.svc.cluster.local", "db-rw", "db-ro")
			return secret(p.cert, p.key, ca.cert)
		}(), now,
			"its certificate does not cover db-rw.shop.svc.cluster.local, db-ro.shop.svc.cluster.local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := userCertificateProblem(tt.secret, hosts, tt.at)
			if tt.want == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(HavePrefix(tt.want))
		})
	}
}
