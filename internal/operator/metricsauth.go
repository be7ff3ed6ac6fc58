package operator

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint delegates each scrape's authentication and
// authorization to the API server, as kube-rbac-proxy and
// controller-runtime's metrics filters do: a TokenReview of the bearer
// token, then a SubjectAccessReview of its user for the request's verb and
// path. It is written here rather than taken from controller-runtime's
// filters package, which links k8s.io/apiserver (CEL, gRPC, OpenTelemetry)
// for these two calls, and would grow the operator's resident binary by
// more than these two calls are worth.
const (
	// scrapeAllowedTTL bounds how long a revoked scraper keeps access.
	scrapeAllowedTTL = time.Minute
	// scrapeDeniedTTL bounds how long a newly allowed scraper waits, and
	// spares the API server a review per request of a misconfigured one.
	scrapeDeniedTTL = 10 * time.Second
	// scrapeReviewTimeout bounds each review: a scrape waits no longer.
	scrapeReviewTimeout = 10 * time.Second
	// maxScrapeDecisions bounds the cache: one entry per token, verb and
	// path.
	maxScrapeDecisions = 1024
)

// tokenReviewer and subjectAccessReviewer are the two calls the filter makes, as
// the typed clients of client-go offer them.
type tokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

type subjectAccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// metricsAuthFilter is the metrics server's FilterProvider.
func metricsAuthFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	a := newScrapeAuth(authn.TokenReviews(), authz.SubjectAccessReviews(), clock.RealClock{})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return a.handler(log, next), nil
	}, nil
}

// scrapeAuth decides who may scrape, remembering recent decisions.
type scrapeAuth struct {
	tokens    tokenReviewer
	access    subjectAccessReviewer
	decisions *cache.LRUExpireCache
}

func newScrapeAuth(tokens tokenReviewer, access subjectAccessReviewer, clk clock.PassiveClock) *scrapeAuth {
	return &scrapeAuth{
		tokens:    tokens,
		access:    access,
		decisions: cache.NewLRUExpireCacheWithClock(maxScrapeDecisions, clk),
	}
}

// decision is the answer to one token, verb and path: an HTTP status, and
// the text of a refusal.
type decision struct {
	status  int
	message string
}

func (a *scrapeAuth) handler(log logr.Logger, next http.Handler) http.Handler {
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
			var err error
			d, err = a.decide(req.Context(), token, verb, path)
			if err != nil {
				// Not remembered: the next scrape asks again.
				log.Error(err, "Cannot authorize a scrape", "path", path)
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
				return
			}
			ttl := scrapeDeniedTTL
			if d.(decision).status == http.StatusOK {
				ttl = scrapeAllowedTTL
			}
			a.decisions.Add(key, d, ttl)
		}
		if d := d.(decision); d.status != http.StatusOK {
			log.V(1).Info("Scrape refused", "path", path, "reason", d.message)
			http.Error(w, d.message, d.status)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// decide asks the API server who the token is and whether it may verb the
// path.
func (a *scrapeAuth) decide(ctx context.Context, token, verb, path string) (decision, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeReviewTimeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("review the token: %w", err)
	}
	if !review.Status.Authenticated {
		return decision{status: http.StatusUnauthorized, message: "Unauthorized"}, nil
	}
	user := review.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	access, err := a.access.Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user.Username,
			UID:                   user.UID,
			Groups:                user.Groups,
			Extra:                 extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("review the access of %s: %w", user.Username, err)
	}
	if !access.Status.Allowed || access.Status.Denied {
		return decision{status: http.StatusForbidden, message: fmt.Sprintf("Authorization denied for user %s", user.Username)}, nil
	}
	return decision{status: http.StatusOK}, nil
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
