package scrapeauth

import (
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// SelfSubjectAccessReviewer is the call of a SelfReview.
type SelfSubjectAccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// SelfReview asks as the scraper: a SelfSubjectAccessReview of the verb and
// path, sent with the scraper's own token. The API server authenticates
// the token (401 when it does not know it) and authorizes its user, who
// may create SelfSubjectAccessReviews through the built-in
// system:basic-user. The endpoint itself needs no right at all: this is
// how an instance manager authorizes scrapes without cluster-scoped
// rights for its ServiceAccount. It sees the token either way, since the
// scrape carries it.
type SelfReview struct {
	Access SelfSubjectAccessReviewer
}

// NewSelfReview returns the SelfReview of the API server config reaches:
// its address and CA, none of its credentials.
func NewSelfReview(config *rest.Config) (SelfReview, error) {
	anonymous := rest.AnonymousClientConfig(config)
	anonymous.Wrap(func(rt http.RoundTripper) http.RoundTripper { return scraperToken{rt} })
	c, err := authorizationclient.NewForConfig(anonymous)
	if err != nil {
		return SelfReview{}, fmt.Errorf("authorization client: %w", err)
	}
	return SelfReview{Access: c.SelfSubjectAccessReviews()}, nil
}

func (s SelfReview) Review(ctx context.Context, token, verb, path string) (Decision, error) {
	review, err := s.Access.Create(withToken(ctx, token), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, createOptions)
	switch {
	case apierrors.IsUnauthorized(err):
		return unauthenticated, nil
	case apierrors.IsForbidden(err):
		// Not even allowed to ask about itself.
		return denied(""), nil
	case err != nil:
		return Decision{}, fmt.Errorf("review the scraper's access: %w", err)
	case !review.Status.Allowed || review.Status.Denied:
		return denied(""), nil
	}
	return allowed, nil
}

type tokenKey struct{}

func withToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// scraperToken sends each request with the token its context carries.
type scraperToken struct{ next http.RoundTripper }

func (t scraperToken) RoundTrip(req *http.Request) (*http.Response, error) {
	token, _ := req.Context().Value(tokenKey{}).(string)
	if token == "" {
		return nil, fmt.Errorf("no scraper token in the request's context")
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return t.next.RoundTrip(req)
}
