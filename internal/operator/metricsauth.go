package operator

import (
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/platform-operator/internal/platform/scrapeauth"
)

// metricsAuthFilter is the metrics server's FilterProvider: each scrape's
// authentication and authorization is delegated to the API server
// (package scrapeauth), as the operator's own identity, with a TokenReview
// and a SubjectAccessReview.
func metricsAuthFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	a := scrapeauth.New(scrapeauth.Delegated{Tokens: authn.TokenReviews(), Access: authz.SubjectAccessReviews()}, clock.RealClock{})
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return a.Handler(log, next), nil
	}, nil
}
