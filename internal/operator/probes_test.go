package operator

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestProbes(t *testing.T) {
	failing := readinessCheck{name: "api-server", check: func(*http.Request) error {
		return errors.New("cannot reach the API server at https://10.0.0.1:6443: connection refused")
	}}
	passing := readinessCheck{name: "caches", check: func(*http.Request) error { return nil }}
	tests := []struct {
		name       string
		set        func(p *probes)
		wantReady  int
		wantReason string
	}{
		{
			name:       "waiting for the API server",
			set:        func(p *probes) { p.starting("waiting for the API server at https://10.0.0.1:6443: connection refused") },
			wantReady:  http.StatusServiceUnavailable,
			wantReason: "not ready: waiting for the API server at https://10.0.0.1:6443: connection refused\n",
		},
		{
			name:       "checking permissions",
			set:        func(p *probes) { p.starting("checking permissions") },
			wantReady:  http.StatusServiceUnavailable,
			wantReason: "not ready: checking permissions\n",
		},
		{
			name:      "running, every check passes",
			set:       func(p *probes) { p.running(passing) },
			wantReady: http.StatusOK,
		},
		{
			name:       "running, a check fails",
			set:        func(p *probes) { p.running(passing, failing) },
			wantReady:  http.StatusServiceUnavailable,
			wantReason: "not ready: api-server: cannot reach the API server at https://10.0.0.1:6443: connection refused\n",
		},
		{
			name:       "starting again after running",
			set:        func(p *probes) { p.running(passing); p.starting("starting the controllers") },
			wantReady:  http.StatusServiceUnavailable,
			wantReason: "not ready: starting the controllers\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := &probes{}
			tt.set(p)
			server := httptest.NewServer(p.handler())
			defer server.Close()

			resp, err := http.Get(server.URL + "/healthz")
			g.Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "alive whatever the stage")

			resp, err = http.Get(server.URL + "/readyz")
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body := new(strings.Builder)
			_, _ = io.Copy(body, resp.Body)
			g.Expect(resp.StatusCode).To(Equal(tt.wantReady))
			if tt.wantReason != "" {
				g.Expect(body.String()).To(Equal(tt.wantReason))
			}
		})
	}
}
