package scrapeauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// A SelfReview sends the scraper's token, not the endpoint's own
// credentials, with a SelfSubjectAccessReview of the verb and path, and
// reads the API server's 401, its refusal to let the scraper ask, and its
// answer; here against a stand-in for the API server that checks the
// request as the real one reads it.
func TestSelfReview(t *testing.T) {
	users := map[string]string{"scraper-token": "prometheus", "nosy-token": "nosy", "mute-token": "mute"}
	allowed := map[string]bool{"prometheus": true}
	var sawOwnCredentials bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" || r.Method != http.MethodPost {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		token, _ := bearerToken(r)
		if token == "instance-token" {
			sawOwnCredentials = true
		}
		user, ok := users[token]
		if !ok {
			status(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		if user == "mute" {
			status(w, http.StatusForbidden, "Forbidden")
			return
		}
		body, _ := io.ReadAll(r.Body)
		var review authorizationv1.SelfSubjectAccessReview
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		attrs := review.Spec.NonResourceAttributes
		review.Status.Allowed = attrs != nil && attrs.Verb == "get" && attrs.Path == "/metrics" && allowed[user]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	defer api.Close()

	reviewer, err := NewSelfReview(&rest.Config{Host: api.URL, BearerToken: "instance-token",
		// The stand-in speaks JSON only.
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	handler := New(reviewer, clk).Handler(testr.New(t), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("metrics"))
	}))
	for _, c := range []struct {
		name, method, path, authorization string
		want                              int
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"unknown token", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"a user not allowed", http.MethodGet, "/metrics", "Bearer nosy-token", http.StatusForbidden},
		{"a user who may not ask", http.MethodGet, "/metrics", "Bearer mute-token", http.StatusForbidden},
		{"an allowed user, another path", http.MethodGet, "/debug", "Bearer scraper-token", http.StatusForbidden},
		{"an allowed user", http.MethodGet, "/metrics", "Bearer scraper-token", http.StatusOK},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.authorization != "" {
			req.Header.Set("Authorization", c.authorization)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, rec.Code, c.want, rec.Body)
		}
	}
	if sawOwnCredentials {
		t.Error("a review was sent with the endpoint's own token")
	}
}

func status(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReason(reason), Message: reason})
}
