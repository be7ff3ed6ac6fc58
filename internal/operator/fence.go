package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"example.com/platform-operator/internal/platform"
)

// The leader election timing: a standby takes over a lease that it has not
// seen renewed for leaseDuration; the leader retries a renewal every
// retryPeriod and gives up (and exits) when it could not renew within
// renewDeadline. Lease and deadline are controller-runtime's defaults. The
// retry period is 1 s instead of 2 s: a standby polls every retryPeriod
// with up to 120 % jitter, so it may see the last renewal up to 2.2 s late
// and try again up to 2.2 s after the lease lapsed; with 2 s those two
// delays alone add up to 8.8 s, and a failover could take 24 s instead of
// at most about 19.5 s. The cost is one Lease request a second per replica.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 1 * time.Second
)

// LeaseGuard wraps the leader election lock and remembers when this process
// last sent a renewal that succeeded. A leader frozen (a long pause, a
// stopped VM) or cut off may resume believing it leads while a standby has
// taken over; until the leader elector notices, the guard's transport
// refuses its writes.
//
// Why this is sound: a standby takes over only after it has seen no renewal
// for leaseDuration, measured from when it observed the last one, which is
// after this process sent it. The guard stops writes renewDeadline after
// sending, five seconds earlier. Both durations are measured on monotonic
// clocks (time.Now carries Go's monotonic reading, and the standby measures
// with its own), so wall-clock jumps do not matter; a frozen process sees
// the whole pause as elapsed when it wakes up.
//
// What it cannot stop: a write that passed the check and was then held on
// its way, by a freeze in the instant between the check and the socket, or
// by a network that splits right then. Such a late write repeats what the
// old leader computed from the spec it saw; server-side apply under one
// field manager, creates that fail on names already taken, and the new
// leader's reconcile of the watch event that the write causes put things
// back at once.
type LeaseGuard struct {
	resourcelock.Interface
	clock    clock.PassiveClock
	validFor time.Duration

	mu sync.Mutex
	// renewedAt is when the last successful acquisition or renewal was
	// sent; zero while this process does not hold the lease.
	renewedAt time.Time
}

// NewLeaseGuard returns a guard that holds nothing until Guard gives it the
// lock (which may be built with its Fence). clk must keep a monotonic
// reading, as clock.RealClock does.
func NewLeaseGuard(clk clock.PassiveClock) *LeaseGuard {
	return &LeaseGuard{clock: clk, validFor: renewDeadline}
}

// Guard makes g wrap lock; call it before the leader election starts.
func (g *LeaseGuard) Guard(lock resourcelock.Interface) {
	g.Interface = lock
}

// Create records the acquisition of a new lease.
func (g *LeaseGuard) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := g.clock.Now()
	err := g.Interface.Create(ctx, record)
	g.record(err, record, sent)
	return err
}

// Update records a renewal, or a release when the holder is emptied.
//
// A release is sent only while Holding says the lease is this process's.
// client-go's leader elector releases the lease whenever it stops leading,
// also when it stopped because it could not renew: a leader that wakes up
// from a pause longer than the lease fails its renewal, reads the Lease
// (now a standby's) and, judging by what it saw before the pause, writes an
// empty holder over it. That would hand the new leader's lease to anyone.
// The refused release is no error: there is nothing of ours to release.
func (g *LeaseGuard) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	if record.HolderIdentity == "" {
		if err := g.Holding(); err != nil {
			klog.FromContext(ctx).Info("Not releasing the leader election lease: it may be another replica's", "reason", err.Error())
			return nil
		}
	}
	sent := g.clock.Now()
	err := g.Interface.Update(ctx, record)
	g.record(err, record, sent)
	return err
}

func (g *LeaseGuard) record(err error, record resourcelock.LeaderElectionRecord, sent time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		// A failed renewal proves nothing either way; the deadline decides.
	case record.HolderIdentity == g.Identity():
		g.renewedAt = sent
	default:
		g.renewedAt = time.Time{}
	}
}

// Holding returns nil while this process holds a lease that no standby can
// have taken, else an error wrapping platform.ErrNotLeader that says why.
func (g *LeaseGuard) Holding() error {
	g.mu.Lock()
	renewed := g.renewedAt
	g.mu.Unlock()
	if renewed.IsZero() {
		return fmt.Errorf("%w: this replica does not hold the leader election lease", platform.ErrNotLeader)
	}
	if age := g.clock.Since(renewed); age > g.validFor {
		return fmt.Errorf("%w: the leader election lease was last renewed %s ago, more than %s", platform.ErrNotLeader, age.Round(time.Millisecond), g.validFor)
	}
	return nil
}

// Fence returns a copy of config whose requests that change state are
// refused while the guard says this process may not write. The check runs
// in the HTTP transport, after client-go's client-side rate limiter and
// retry back-off (rest.Request waits for both before it calls the
// transport), so a write held back by throttling is checked when it is
// sent, not when it was queued. It covers every client made from the
// config: the manager's cached client and API reader, and its event
// recorder. The lease lock's own client must be made from the unfenced
// config, or a leader could never renew.
func (g *LeaseGuard) Fence(config *rest.Config) (*rest.Config, error) {
	host, err := url.Parse(config.Host)
	if err != nil {
		return nil, fmt.Errorf("parse the API server address %q: %w", config.Host, err)
	}
	base := strings.TrimSuffix(host.Path, "/")
	fenced := rest.CopyConfig(config)
	fenced.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &fencedTransport{
			next:  next,
			guard: g,
			// Token and access reviews (the metrics endpoint's
			// authentication and authorization of each scrape) are
			// questions, not state: the API server stores nothing.
			exempt: []string{base + "/apis/authentication.k8s.io/", base + "/apis/authorization.k8s.io/"},
		}
	})
	return fenced, nil
}

// fencedTransport refuses POST, PUT, PATCH and DELETE requests, other than
// to the exempt path prefixes, while the guard refuses.
type fencedTransport struct {
	next   http.RoundTripper
	guard  interface{ Holding() error }
	exempt []string
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if changesState(req.Method) && !t.isExempt(req.URL.Path) {
		if err := t.guard.Holding(); err != nil {
			// A RoundTripper must close the body, even when it fails.
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("refused %s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go reach the transport underneath, for
// instance to close idle connections.
func (t *fencedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *fencedTransport) isExempt(path string) bool {
	for _, prefix := range t.exempt {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

func changesState(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
