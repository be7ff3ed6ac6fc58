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
	status, body, _ := HTTPGetCompressed(ctx, url, token)
	return status, body
}

// HTTPGetCompressed is HTTPGet that also tells whether the server
// compressed its answer: Go's transport asks for gzip, as Prometheus does,
// and undoes it (http.Response.Uncompressed).
func HTTPGetCompressed(ctx context.Context, url, token string) (status int, body string, compressed bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error(), false
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
		return 0, err.Error(), false
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Uncompressed
}
