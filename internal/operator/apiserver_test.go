package operator

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeVersion fails the first failures calls with err, then answers; it
// notes when each call came.
type fakeVersion struct {
	clock    *clocktesting.FakeClock
	failures int
	err      error

	// afterCall, when set, is called with the number of calls so far.
	afterCall func(n int)

	mu    sync.Mutex
	calls []time.Time
}

func (f *fakeVersion) ServerVersionWithContext(ctx context.Context) (*version.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, f.clock.Now())
	if f.afterCall != nil {
		f.afterCall(len(f.calls))
	}
	if len(f.calls) <= f.failures {
		return nil, f.err
	}
	return &version.Info{GitVersion: "v1.37.2"}, nil
}

var refused = &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/version?timeout=10s", Err: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")}

// runWait waits for the API server on a fake clock, stepping it whenever the
// wait sleeps, and returns the error, the reasons given to /readyz and the
// lines logged.
func runWait(t *testing.T, ctx context.Context, client *fakeVersion) (reasons, logs []string, err error) {
	t.Helper()
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		logs = append(logs, args)
		mu.Unlock()
	}, funcr.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := waitForAPIServer(ctx, client, "https://10.0.0.1:6443", client.clock, func(reason string) {
			mu.Lock()
			reasons = append(reasons, reason)
			mu.Unlock()
		}, log)
		done <- err
	}()
	for {
		select {
		case err := <-done:
			mu.Lock()
			defer mu.Unlock()
			return reasons, logs, err
		case <-time.After(time.Millisecond):
			if client.clock.HasWaiters() {
				client.clock.Step(100 * time.Millisecond)
			}
		}
	}
}

func TestWaitForAPIServerWaitsWithBackoff(t *testing.T) {
	g := NewWithT(t)
	client := &fakeVersion{clock: clocktesting.NewFakeClock(start), failures: 12, err: refused}
	reasons, logs, err := runWait(t, context.Background(), client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.calls).To(HaveLen(13))
	g.Expect(reasons).To(HaveLen(12))
	g.Expect(reasons[0]).To(Equal("waiting for the API server at https://10.0.0.1:6443: dial tcp 10.0.0.1:6443: connect: connection refused"))

	var longest time.Duration
	for i := 1; i < len(client.calls); i++ {
		longest = max(longest, client.calls[i].Sub(client.calls[i-1]))
	}
	g.Expect(client.calls[1].Sub(client.calls[0])).To(BeNumerically("<", time.Second), "the first retry comes soon")
	g.Expect(longest).To(BeNumerically(">=", 5*time.Second), "it backs off")
	g.Expect(longest).To(BeNumerically("<=", 5600*time.Millisecond), "to about one try every 5 s")

	// A line every 5 s or so, not one per try.
	waited := client.calls[len(client.calls)-1].Sub(client.calls[0])
	g.Expect(len(logs)).To(BeNumerically("<", len(reasons)))
	g.Expect(len(logs)).To(BeNumerically(">=", int(waited/(6*time.Second))))
	g.Expect(logs[0]).To(ContainSubstring(`"msg"="Waiting for the API server" "apiServer"="https://10.0.0.1:6443" "error"="dial tcp 10.0.0.1:6443: connect: connection refused"`))
}

func TestWaitForAPIServerStops(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		cancel  bool
		wantErr string
	}{
		{
			name:    "credentials rejected: no retry cures it",
			err:     apierrors.NewUnauthorized("token expired"),
			wantErr: "the API server at https://10.0.0.1:6443 rejected the operator's credentials (401 Unauthorized): check the token or certificate of the kubeconfig",
		},
		{
			name:    "forbidden",
			err:     apierrors.NewForbidden(schema.GroupResource{Resource: "version"}, "", errors.New("no")),
			wantErr: "refused to tell its version (403 Forbidden)",
		},
		{
			name:    "stopped while waiting",
			err:     refused,
			cancel:  true,
			wantErr: context.Canceled.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := &fakeVersion{clock: clocktesting.NewFakeClock(start), failures: 1000, err: tt.err}
			if tt.cancel {
				client.afterCall = func(n int) {
					if n == 3 {
						cancel()
					}
				}
			}
			_, _, err := runWait(t, ctx, client)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestConnectionProblem(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{refused, "dial tcp 10.0.0.1:6443: connect: connection refused"},
		{apierrors.NewInternalError(errors.New("etcd is down")), "Internal error occurred: etcd is down (HTTP 500)"},
		{context.DeadlineExceeded, "context deadline exceeded"},
	} {
		if got := connectionProblem(tt.err); got != tt.want {
			t.Errorf("connectionProblem(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestAPIServerReachable(t *testing.T) {
	g := NewWithT(t)
	client := &fakeVersion{clock: clocktesting.NewFakeClock(start), failures: 1, err: refused}
	check := apiServerReachable(client, "https://10.0.0.1:6443")
	req, err := http.NewRequest(http.MethodGet, "/readyz", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(check(req)).To(MatchError("cannot reach the API server at https://10.0.0.1:6443: dial tcp 10.0.0.1:6443: connect: connection refused"))
	g.Expect(check(req)).To(Succeed())
}

// A kube-apiserver that has just started refuses valid credentials until its
// authenticator has synced: a few rejections are waited out, and said so.
func TestWaitForAPIServerWaitsOutEarlyRejections(t *testing.T) {
	g := NewWithT(t)
	client := &fakeVersion{clock: clocktesting.NewFakeClock(start), failures: 3, err: apierrors.NewUnauthorized("token not recognized yet")}
	reasons, _, err := runWait(t, context.Background(), client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reasons).To(ContainElement(ContainSubstring("rejected the operator's credentials (401 Unauthorized)")))
	g.Expect(reasons[0]).To(ContainSubstring("retrying"))
}
