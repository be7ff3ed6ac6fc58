package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A scraper that accepts gzip gets the metrics as they are: the handler
// options the manager gives its metrics server turn compression off.
func TestMetricsAreServedUncompressed(t *testing.T) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "example_total", Help: "An example."}))
	for _, tc := range []struct {
		name     string
		opts     []func(*promhttp.HandlerOpts)
		encoding string
	}{
		{name: "promhttp's default", encoding: "gzip"},
		{name: "the operator's", opts: []func(*promhttp.HandlerOpts){uncompressedMetrics}, encoding: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := promhttp.HandlerOpts{}
			for _, o := range tc.opts {
				o(&opts)
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			promhttp.HandlerFor(registry, opts).ServeHTTP(rec, req)
			if got := rec.Header().Get("Content-Encoding"); got != tc.encoding {
				t.Errorf("Content-Encoding %q, want %q", got, tc.encoding)
			}
		})
	}
}
