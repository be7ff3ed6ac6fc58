package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// probes answers /healthz and /readyz for the whole life of the process,
// from before the first request to the API server: a replica that waits for
// the API server or checks its permissions is alive, and says why it is not
// ready yet. controller-runtime's own probe server starts only with the
// manager, and withholds the reasons of failed checks.
type probes struct {
	mu sync.RWMutex
	// reason says why the operator is not ready while it starts.
	reason string
	// checks decide readiness once the manager runs.
	checks []readinessCheck
}

type readinessCheck struct {
	name  string
	check func(*http.Request) error
}

// starting makes /readyz answer 503 with reason.
func (p *probes) starting(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reason, p.checks = reason, nil
}

// running makes /readyz answer with checks, in order.
func (p *probes) running(checks ...readinessCheck) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reason, p.checks = "", checks
}

// notReady says why the operator is not ready, or "" when it is.
func (p *probes) notReady(req *http.Request) string {
	p.mu.RLock()
	reason, checks := p.reason, p.checks
	p.mu.RUnlock()
	if reason != "" {
		return reason
	}
	for _, c := range checks {
		if err := c.check(req); err != nil {
			return c.name + ": " + err.Error()
		}
	}
	return ""
}

func (p *probes) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Alive as long as the process answers: nothing a restart would
		// cure is checked here.
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		if reason := p.notReady(req); reason != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: "+reason)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serve listens on addr now, so that a port in use fails the start, and
// serves until stop is called.
func (p *probes) serve(addr string, log logr.Logger) (stop func(), err error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for health probes on %s: %w", addr, err)
	}
	server := &http.Server{Handler: p.handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Health probe server stopped", "address", addr)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
		<-done
	}, nil
}
