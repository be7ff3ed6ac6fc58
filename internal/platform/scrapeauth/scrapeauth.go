// Package scrapeauth decides who may scrape a metrics endpoint, by asking
// the API server, as kube-rbac-proxy and controller-runtime's metrics
// filters do: a request needs a bearer token, and the token's user must be
// allowed the request's verb on its path (a non-resource URL, as
// ClusterRole platform-operator-metrics-reader grants get /metrics). The
// operator's /metrics and each PostgreSQL instance manager's /metrics use
// it, with the two ways of asking below.
//
// It is written here rather than taken from controller-runtime's filters
// package, which links k8s.io/apiserver (CEL, gRPC, OpenTelemetry) for these
// calls, and would grow the operator's resident binary by more than they
// are worth.
package scrapeauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

const (
	// AllowedTTL bounds how long a revoked scraper keeps access.
	AllowedTTL = time.Minute
	// DeniedTTL bounds how long a newly allowed scraper waits, and spares
	// the API server a review per request of a misconfigured one.
	DeniedTTL = 10 * time.Second
	// reviewTimeout bounds each review: a scrape waits no longer.
	reviewTimeout = 10 * time.Second
	// maxDecisions bounds the cache: one entry per token, verb and path.
	maxDecisions = 1024
)

// Decision is the answer to one token, verb and path: an HTTP status
// (200, 401 or 403), and the text of a refusal.
type Decision struct {
	Status  int
	Message string
}

var (
	allowed         = Decision{Status: http.StatusOK}
	unauthenticated = Decision{Status: http.StatusUnauthorized, Message: "Unauthorized"}
)

func denied(user string) Decision {
	if user == "" {
		return Decision{Status: http.StatusForbidden, Message: "Authorization denied"}
	}
	return Decision{Status: http.StatusForbidden, Message: fmt.Sprintf("Authorization denied for user %s", user)}
}

// A Reviewer asks the API server whether the holder of token may verb the
// path. An error is a failure to ask, not a refusal.
type Reviewer interface {
	Review(ctx context.Context, token, verb, path string) (Decision, error)
}

// Auth is the filter: it asks its Reviewer, remembering recent decisions.
type Auth struct {
	reviewer  Reviewer
	decisions *cache.LRUExpireCache
}

// New returns the filter of reviewer; clk times its remembered decisions.
func New(reviewer Reviewer, clk clock.PassiveClock) *Auth {
	return &Auth{reviewer: reviewer, decisions: cache.NewLRUExpireCacheWithClock(maxDecisions, clk)}
}

// Handler serves next to the requests the reviewer allows: 401 without a
// token or with one the API server does not know, 403 for a user not
// allowed, 500 when the API server cannot be asked (not remembered).
func (a *Auth) Handler(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb, path := strings.ToLower(req.Method), req.URL.Path
		// The key holds a digest of the token, never the token itself.
		key := fmt.Sprintf("%x %s %s", sha256.Sum256([]byte(token)), verb, path)
		d, cached := a.decisions.Get(key)
		if !cached {
			ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
			decision, err := a.reviewer.Review(ctx, token, verb, path)
			cancel()
			if err != nil {
				log.Error(err, "Cannot authorize a scrape", "path", path)
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
				return
			}
			ttl := DeniedTTL
			if decision.Status == http.StatusOK {
				ttl = AllowedTTL
			}
			a.decisions.Add(key, decision, ttl)
			d = decision
		}
		if d := d.(Decision); d.Status != http.StatusOK {
			log.V(1).Info("Scrape refused", "path", path, "reason", d.Message)
			http.Error(w, d.Message, d.Status)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(req.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

var createOptions = metav1.CreateOptions{}
