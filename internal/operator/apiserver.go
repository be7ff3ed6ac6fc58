package operator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
)

// The wait for the API server backs off to one try every 5 s: cheap during
// a long outage, quick to notice its end. It logs at most every 5 s.
var (
	apiServerBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 5 * time.Second}
	apiServerLogGap  = 5 * time.Second
	// rejectionGrace is how long credentials that the API server rejects
	// (401) or a version it refuses to tell (403) are retried: a
	// kube-apiserver that has just started answers before its token
	// authenticator and its RBAC authorizer have synced, and refuses
	// valid credentials for a few seconds.
	rejectionGrace = 30 * time.Second
)

// waitForAPIServer asks the API server for its version until it answers,
// returns it, and tells status why it waits. An API server that is down,
// restarting or not yet up is waited for, however long: the process stays
// alive and answers /healthz, so that neither a liveness probe nor a crash
// loop delays the moment it can work. Only credentials that the API server
// keeps rejecting for rejectionGrace end the wait, since retrying cannot
// cure them. It returns ctx.Err() when ctx ends first.
func waitForAPIServer(ctx context.Context, client discovery.ServerVersionInterfaceWithContext, host string,
	clk clock.Clock, status func(reason string), log logr.Logger) (*version.Info, error) {
	backoff := apiServerBackoff
	var lastLog, rejectedSince time.Time
	for {
		info, err := client.ServerVersionWithContext(ctx)
		var rejection error
		switch {
		case err == nil:
			return info, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case apierrors.IsUnauthorized(err):
			rejection = fmt.Errorf("the API server at %s rejected the operator's credentials (401 Unauthorized): check the token or certificate of the kubeconfig", host)
		case apierrors.IsForbidden(err):
			rejection = fmt.Errorf("the API server at %s refused to tell its version (403 Forbidden): %w", host, err)
		}
		problem := connectionProblem(err)
		if rejection != nil {
			if rejectedSince.IsZero() {
				rejectedSince = clk.Now()
			}
			if clk.Since(rejectedSince) >= rejectionGrace {
				return nil, rejection
			}
			problem = rejection.Error() + " (retrying: an API server that has just started may not recognize them yet)"
		} else {
			rejectedSince = time.Time{}
		}
		status(fmt.Sprintf("waiting for the API server at %s: %s", host, problem))
		delay := backoff.Step()
		if lastLog.IsZero() || clk.Since(lastLog) >= apiServerLogGap {
			log.Info("Waiting for the API server", "apiServer", host, "error", problem, "retryIn", delay.Round(time.Millisecond).String())
			lastLog = clk.Now()
		}
		timer := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C():
		}
	}
}

// apiServerReachable is a readiness check: the API server answers within a
// second. During an outage /readyz then says so, instead of reporting a
// replica ready that can do nothing.
func apiServerReachable(client discovery.ServerVersionInterfaceWithContext, host string) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if _, err := client.ServerVersionWithContext(ctx); err != nil {
			return fmt.Errorf("cannot reach the API server at %s: %s", host, connectionProblem(err))
		}
		return nil
	}
}

// connectionProblem is the cause of a failed request without the URL that
// client-go puts in front of it: "dial tcp 10.0.0.1:443: connect:
// connection refused".
// An answer with an error status says its code, which is all a server that
// is shutting down may give.
func connectionProblem(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return fmt.Sprintf("%v (HTTP %d)", err, status.Status().Code)
	}
	return err.Error()
}
