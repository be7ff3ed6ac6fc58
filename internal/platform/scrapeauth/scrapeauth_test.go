package scrapeauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviews answers TokenReviews and SubjectAccessReviews as an API server
// would for a few tokens and users, and counts the calls.
type fakeReviews struct {
	users   map[string]string // token → user name
	allowed map[string]bool   // user name → may get /metrics
	fail    error
	calls   int
}

type fakeTokenReviews struct{ *fakeReviews }

func (f fakeTokenReviews) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	out := r.DeepCopy()
	if name, ok := f.users[r.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: name, Groups: []string{"system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}},
		}}
	}
	return out, nil
}

type fakeAccessReviews struct{ *fakeReviews }

func (f fakeAccessReviews) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.calls++
	out := r.DeepCopy()
	attrs := r.Spec.NonResourceAttributes
	if attrs != nil && attrs.Verb == "get" && attrs.Path == "/metrics" && f.allowed[r.Spec.User] &&
		len(r.Spec.Groups) == 1 && r.Spec.Extra["k"][0] == "v" {
		out.Status.Allowed = true
	}
	return out, nil
}

func TestDelegated(t *testing.T) {
	reviews := &fakeReviews{
		users:   map[string]string{"scraper-token": "prometheus", "nosy-token": "nosy"},
		allowed: map[string]bool{"prometheus": true},
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	auth := New(Delegated{Tokens: fakeTokenReviews{reviews}, Access: fakeAccessReviews{reviews}}, clk)
	handler := auth.Handler(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("metrics"))
	}))
	scrape := func(method, path, authorization string) int {
		req := httptest.NewRequest(method, path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}

	cases := []struct {
		name, method, path, authorization string
		want                              int
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic c2NyYXBlcg==", http.StatusUnauthorized},
		{"empty bearer token", http.MethodGet, "/metrics", "Bearer ", http.StatusUnauthorized},
		{"unknown token", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"a user not allowed", http.MethodGet, "/metrics", "Bearer nosy-token", http.StatusForbidden},
		{"an allowed user, another path", http.MethodGet, "/debug", "Bearer scraper-token", http.StatusForbidden},
		{"an allowed user, another verb", http.MethodPost, "/metrics", "Bearer scraper-token", http.StatusForbidden},
		{"an allowed user", http.MethodGet, "/metrics", "Bearer scraper-token", http.StatusOK},
		{"an allowed user, scheme in lower case", http.MethodGet, "/metrics", "bearer scraper-token", http.StatusOK},
	}
	for _, c := range cases {
		if got := scrape(c.method, c.path, c.authorization); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}

	// Decisions are remembered: no review while they last, a new one after.
	calls := reviews.calls
	if got := scrape(http.MethodGet, "/metrics", "Bearer scraper-token"); got != http.StatusOK || reviews.calls != calls {
		t.Errorf("a repeated scrape: status %d after %d more reviews, want 200 after none", got, reviews.calls-calls)
	}
	reviews.allowed["prometheus"] = false // access revoked
	clk.SetTime(clk.Now().Add(AllowedTTL + time.Second))
	if got := scrape(http.MethodGet, "/metrics", "Bearer scraper-token"); got != http.StatusForbidden {
		t.Errorf("after the allowed decision expired and access was revoked: status %d, want 403", got)
	}
	if got := scrape(http.MethodGet, "/metrics", "Bearer nosy-token"); got != http.StatusForbidden {
		t.Errorf("a user not allowed, asked again: status %d, want 403", got)
	}
	reviews.allowed["nosy"] = true // access granted
	if got := scrape(http.MethodGet, "/metrics", "Bearer nosy-token"); got != http.StatusForbidden {
		t.Errorf("right after access was granted: status %d, want the remembered 403", got)
	}
	clk.SetTime(clk.Now().Add(DeniedTTL + time.Second))
	if got := scrape(http.MethodGet, "/metrics", "Bearer nosy-token"); got != http.StatusOK {
		t.Errorf("after the denied decision expired: status %d, want 200", got)
	}

	// A failed review is an error of the endpoint, and is not remembered.
	reviews.fail = errors.New("connection refused")
	if got := scrape(http.MethodGet, "/metrics", "Bearer other-token"); got != http.StatusInternalServerError {
		t.Errorf("a failing API server: status %d, want 500", got)
	}
	reviews.fail = nil
	reviews.users["other-token"] = "prometheus"
	reviews.allowed["prometheus"] = true
	if got := scrape(http.MethodGet, "/metrics", "Bearer other-token"); got != http.StatusOK {
		t.Errorf("once the API server answers again: status %d, want 200", got)
	}
}
