package devenv

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"
)

// HTTPGet fetches url, with a bearer token when one is given, and returns
// the status code and body (0 and the error's text when there is no
// answer). It accepts the self-signed certificate of the operator's metrics
// endpoint: tests check who may read it, not who serves it.
func HTTPGet(ctx context.Context, url, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see above
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
