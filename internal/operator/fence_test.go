package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"example.com/platform-operator/internal/platform"
)

// fakeLock is a resourcelock.Interface that succeeds or fails on demand
// and records the updates it was asked to write.
type fakeLock struct {
	resourcelock.Interface
	fail    error
	updates []resourcelock.LeaderElectionRecord
}

func (l *fakeLock) Identity() string { return "me" }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.fail
}
func (l *fakeLock) Update(_ context.Context, record resourcelock.LeaderElectionRecord) error {
	l.updates = append(l.updates, record)
	return l.fail
}

func newTestGuard(lock resourcelock.Interface, clk clock.PassiveClock) *LeaseGuard {
	g := NewLeaseGuard(clk)
	g.Guard(lock)
	return g
}

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestLeaseGuard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clock := clocktesting.NewFakePassiveClock(start)
	lock := &fakeLock{}
	guard := newTestGuard(lock, clock)
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}

	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("does not hold")), "before acquiring")

	g.Expect(guard.Create(ctx, mine)).To(Succeed())
	g.Expect(guard.Holding()).To(Succeed())

	clock.SetTime(start.Add(2 * time.Second))
	g.Expect(guard.Update(ctx, mine)).To(Succeed())
	clock.SetTime(start.Add(12 * time.Second))
	g.Expect(guard.Holding()).To(Succeed(), "10 s after the last renewal")

	// Frozen or cut off: renewals stop, or fail. Past the renew deadline it
	// must stop writing, before a standby can take over (15 s).
	lock.fail = errors.New("connection refused")
	g.Expect(guard.Update(ctx, mine)).NotTo(Succeed())
	clock.SetTime(start.Add(12*time.Second + time.Millisecond))
	err := guard.Holding()
	g.Expect(err).To(MatchError(ContainSubstring("last renewed 10.001s ago, more than 10s")))
	g.Expect(errors.Is(err, platform.ErrNotLeader)).To(BeTrue())

	// Renewed again (the API server came back in time).
	lock.fail = nil
	g.Expect(guard.Update(ctx, mine)).To(Succeed())
	g.Expect(guard.Holding()).To(Succeed())

	// Another holder in the record, or a release on shutdown (the holder
	// emptied): not ours.
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "other"})).To(Succeed())
	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("does not hold")))
	g.Expect(guard.Create(ctx, mine)).To(Succeed())
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""})).To(Succeed())
	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("does not hold")))
}

// A release (the holder emptied) is sent on a graceful stop, while the
// lease is surely this process's; a leader that wakes up after its lease
// lapsed, and may have been taken over, releases nothing.
func TestLeaseGuardReleasesOnlyALeaseItHolds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clock := clocktesting.NewFakePassiveClock(start)
	lock := &fakeLock{}
	guard := newTestGuard(lock, clock)
	release := resourcelock.LeaderElectionRecord{HolderIdentity: ""}

	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	clock.SetTime(start.Add(5 * time.Second))
	g.Expect(guard.Update(ctx, release)).To(Succeed())
	g.Expect(lock.updates).To(HaveLen(2), "a release 5 s after the renewal is sent")

	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	clock.SetTime(start.Add(25 * time.Second))
	g.Expect(guard.Update(ctx, release)).To(Succeed(), "nothing to release is no error")
	g.Expect(lock.updates).To(HaveLen(3), "a release 20 s after the renewal is not sent")

	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "other"})).To(Succeed())
	g.Expect(guard.Update(ctx, release)).To(Succeed())
	g.Expect(lock.updates).To(HaveLen(4), "nor one after the record named another holder")
}

// The renewal counts from when it was sent, not from when it returned: a
// standby measures from when it saw it, which is after it was sent.
func TestLeaseGuardCountsFromTheSending(t *testing.T) {
	g := NewWithT(t)
	clock := clocktesting.NewFakePassiveClock(start)
	slow := &slowLock{clock: clock, takes: 3 * time.Second}
	guard := newTestGuard(slow, clock)
	g.Expect(guard.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	clock.SetTime(start.Add(10*time.Second + time.Millisecond))
	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("last renewed 10.001s ago")))
}

type slowLock struct {
	fakeLock
	clock *clocktesting.FakePassiveClock
	takes time.Duration
}

func (l *slowLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	l.clock.SetTime(l.clock.Now().Add(l.takes))
	return nil
}

// recorder is the transport under the fence: it answers 200 and remembers
// what reached it.
type recorder struct {
	mu   sync.Mutex
	sent []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.sent = append(r.sent, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func TestFencedTransport(t *testing.T) {
	tests := []struct {
		method, path string
		// wantRefused while the lease is not held.
		wantRefused bool
	}{
		{http.MethodGet, "/apis/apps/v1/namespaces/a/deployments", false},
		{http.MethodGet, "/apis/apps/v1/deployments?watch=true", false},
		{http.MethodHead, "/api/v1/namespaces/a/services/s", false},
		{http.MethodPost, "/apis/apps/v1/namespaces/a/deployments", true},
		{http.MethodPut, "/apis/example.com/v1/namespaces/a/websites/w/status", true},
		{http.MethodPatch, "/apis/apps/v1/namespaces/a/deployments/w", true},
		{http.MethodPatch, "/apis/example.com/v1/namespaces/a/websites/w/status", true},
		{http.MethodDelete, "/apis/networking.k8s.io/v1/namespaces/a/ingresses/w", true},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/a/events", true},
		{http.MethodPatch, "/api/v1/namespaces/a/events/e", true},
		// The metrics endpoint's questions to the API server store nothing.
		{http.MethodPost, "/prefix/apis/authentication.k8s.io/v1/tokenreviews", false},
		{http.MethodPost, "/prefix/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		// Only under the API server's own path.
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			g := NewWithT(t)
			clock := clocktesting.NewFakePassiveClock(start)
			guard := newTestGuard(&fakeLock{}, clock)
			config, err := guard.Fence(&rest.Config{Host: "https://api.example:6443/prefix/"})
			g.Expect(err).NotTo(HaveOccurred())
			next := &recorder{}
			transport := config.WrapTransport(next)
			send := func() error {
				req, err := http.NewRequest(tt.method, "https://api.example:6443"+tt.path, strings.NewReader("{}"))
				g.Expect(err).NotTo(HaveOccurred())
				resp, err := transport.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				return err
			}

			// Never held.
			err = send()
			if tt.wantRefused {
				g.Expect(errors.Is(err, platform.ErrNotLeader)).To(BeTrue(), "%v", err)
				g.Expect(err).To(MatchError(ContainSubstring("refused " + tt.method + " " + tt.path + ": not the leader")))
				g.Expect(next.sent).To(BeEmpty())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(next.sent).To(HaveLen(1))
			}

			// Held and renewed 10 s ago: every request passes.
			g.Expect(guard.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
			clock.SetTime(start.Add(10 * time.Second))
			next.sent = nil
			g.Expect(send()).To(Succeed())
			g.Expect(next.sent).To(HaveLen(1))

			// Renewed more than the renew deadline ago (frozen, or cut off
			// from the API server): refused again.
			clock.SetTime(start.Add(10*time.Second + time.Nanosecond))
			next.sent = nil
			err = send()
			if tt.wantRefused {
				g.Expect(errors.Is(err, platform.ErrNotLeader)).To(BeTrue(), "%v", err)
				g.Expect(next.sent).To(BeEmpty())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// Through client-go, the refusal comes back as an error that wraps
// platform.ErrNotLeader, so that a reconciler can tell it from a failure,
// and nothing reaches the API server; reads and reviews go through.
func TestFenceThroughClientGo(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	var reached []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		reached = append(reached, req.Method+" "+req.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(req.URL.Path, "tokenreviews") {
			io.WriteString(w, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":true}}`)
			return
		}
		io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a"}}`)
	}))
	defer server.Close()

	clock := clocktesting.NewFakePassiveClock(start)
	guard := newTestGuard(&fakeLock{}, clock)
	config, err := guard.Fence(&rest.Config{Host: server.URL})
	g.Expect(err).NotTo(HaveOccurred())
	clientset, err := kubernetes.NewForConfig(config)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "a"}}

	_, err = clientset.CoreV1().ConfigMaps("a").Create(ctx, configMap, metav1.CreateOptions{})
	g.Expect(errors.Is(err, platform.ErrNotLeader)).To(BeTrue(), "%v", err)
	err = clientset.CoreV1().ConfigMaps("a").Delete(ctx, "c", metav1.DeleteOptions{})
	g.Expect(errors.Is(err, platform.ErrNotLeader)).To(BeTrue(), "%v", err)
	_, err = clientset.CoreV1().ConfigMaps("a").Get(ctx, "c", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = clientset.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reached).To(Equal([]string{"GET /api/v1/namespaces/a/configmaps/c", "POST /apis/authentication.k8s.io/v1/tokenreviews"}))

	g.Expect(guard.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	_, err = clientset.CoreV1().ConfigMaps("a").Create(ctx, configMap, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reached).To(HaveLen(3))
}
