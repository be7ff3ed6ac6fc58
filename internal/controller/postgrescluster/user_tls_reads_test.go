package postgrescluster

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/pgspec"
)

// The Secret of a user's certificate is read again only when something
// may have changed: another Secret named, the spec changed, the served
// copy gone or edited, or the recheck interval over.
func TestUserSecretReadDue(t *testing.T) {
	at := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	served := func(cert string) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{corev1.TLSCertKey: []byte(cert), corev1.TLSPrivateKeyKey: []byte("key"), pgspec.CACertKey: []byte("ca")}}
	}
	last := userSecretRead{secret: "db-certs", generation: 3, served: servedDigest(served("cert")), at: at}
	for _, tc := range []struct {
		name       string
		remembered bool
		secret     string
		generation int64
		live       *corev1.Secret
		now        time.Time
		due        bool
	}{
		{"nothing remembered", false, "db-certs", 3, served("cert"), at.Add(time.Second), true},
		{"unchanged within the interval", true, "db-certs", 3, served("cert"), at.Add(userCertificateRecheck - time.Second), false},
		{"the interval over", true, "db-certs", 3, served("cert"), at.Add(userCertificateRecheck), true},
		{"another Secret named", true, "other-certs", 3, served("cert"), at.Add(time.Second), true},
		{"the spec changed (more instances to cover)", true, "db-certs", 4, served("cert"), at.Add(time.Second), true},
		{"the served copy deleted", true, "db-certs", 3, nil, at.Add(time.Second), true},
		{"the served copy edited by hand", true, "db-certs", 3, served("forged"), at.Add(time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(userSecretReadDue(last, tc.remembered, tc.secret, tc.generation, tc.live, tc.now)).To(Equal(tc.due))
		})
	}
}

// What is remembered stays bounded by the clusters read within the
// recheck interval: a deleted cluster's read is dropped once it is due.
func TestUserSecretReadsForgetWhatIsDue(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	var reads userSecretReads
	reads.remember(types.UID("deleted"), userSecretRead{secret: "a", at: at})
	reads.remember(types.UID("recent"), userSecretRead{secret: "b", at: at.Add(time.Minute)})
	reads.remember(types.UID("now"), userSecretRead{secret: "c", at: at.Add(userCertificateRecheck)})
	_, ok := reads.last(types.UID("deleted"))
	g.Expect(ok).To(BeFalse(), "a read that is due again is dropped")
	recent, ok := reads.last(types.UID("recent"))
	g.Expect(ok).To(BeTrue())
	g.Expect(recent.secret).To(Equal("b"))
	g.Expect(reads.byCluster).To(HaveLen(2))
}
