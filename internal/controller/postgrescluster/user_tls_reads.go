package postgrescluster

import (
	"crypto/sha256"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/pgspec"
)

// userSecretRead is the last time the Secret of a cluster's own
// certificate was read and found fit to serve: which Secret, for which
// generation of the cluster's spec (whose instances the certificate must
// cover), the digest of the copy then served, and when.
type userSecretRead struct {
	secret     string
	generation int64
	served     [sha256.Size]byte
	at         time.Time
}

// servedDigest is the digest of what Secret s (CLUSTER-server) serves,
// by which a hand edit of it since the last read is seen.
func servedDigest(s *corev1.Secret) [sha256.Size]byte {
	h := sha256.New()
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, pgspec.CACertKey} {
		h.Write(s.Data[key])
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// userSecretReadDue says whether the Secret named secret must be read
// again for a cluster at generation, now, given the last read that found
// it fit (ok false when none is remembered) and the copy the instances
// serve (nil when there is none). The operator's cache holds only its own
// Secrets, so each read of a user's is a request to the API server: it
// reads again when the cluster names another Secret or its spec changed,
// when the served copy is gone or differs from what it put there, and
// otherwise once every userCertificateRecheck, in which a renewal is seen.
func userSecretReadDue(last userSecretRead, ok bool, secret string, generation int64, served *corev1.Secret, now time.Time) bool {
	return !ok || served == nil || last.secret != secret || last.generation != generation ||
		last.served != servedDigest(served) || !now.Before(last.at.Add(userCertificateRecheck))
}

// userSecretReads remembers, per cluster, the last read of the Secret of
// its own certificate that found it fit to serve. Forgetting is harmless:
// the Secret is read again, as after a restart of the operator.
type userSecretReads struct {
	mu        sync.Mutex
	byCluster map[types.UID]userSecretRead
}

func (r *userSecretReads) last(cluster types.UID) (userSecretRead, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	read, ok := r.byCluster[cluster]
	return read, ok
}

// remember records read for cluster, and drops the reads that are due
// again anyway, which bounds the memory by the clusters read lately
// (deleted ones among them).
func (r *userSecretReads) remember(cluster types.UID, read userSecretRead) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byCluster == nil {
		r.byCluster = map[types.UID]userSecretRead{}
	}
	for uid, old := range r.byCluster {
		if !read.at.Before(old.at.Add(userCertificateRecheck)) {
			delete(r.byCluster, uid)
		}
	}
	r.byCluster[cluster] = read
}
