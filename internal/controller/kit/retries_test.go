package kit

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var errRefused = errors.New("the API server refused it")

func TestRetriesComeBackNoLaterThanAsked(t *testing.T) {
	req := request("backup")
	tests := []struct {
		name string
		// failures before this one, retried with backoff
		failedBefore int
		err          error
		retry        bool
		after        time.Duration

		terminal bool
		want     time.Duration
	}{
		{name: "a first failure: the backoff's first step, sooner than the time asked", err: errRefused, retry: true, after: time.Minute, want: 5 * time.Millisecond},
		{name: "a long run of failures: the time asked, sooner than the backoff", failedBefore: 30, err: errRefused, retry: true, after: time.Minute, want: time.Minute},
		{name: "a long run of failures without a time asked: the backoff, capped", failedBefore: 30, err: errRefused, retry: true, want: 1000 * time.Second},
		{name: "a refusal of the spec: again at the time asked only", failedBefore: 3, err: errRefused, after: time.Hour, want: time.Hour},
		{name: "a refusal of the spec and no time asked: terminal", err: errRefused, terminal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := NewRetries()
			for range tt.failedBefore {
				r.When(req)
			}
			result, err := r.Result(req, tt.err, tt.retry, tt.after)
			g.Expect(result.RequeueAfter).To(BeZero(), "dropped by controller-runtime with an error")
			g.Expect(err).To(MatchError(tt.err))
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(Equal(tt.terminal))
			if tt.terminal {
				return
			}
			g.Expect(r.When(req)).To(Equal(tt.want))
		})
	}
}

func TestRetriesSuccessAndUnplannedFailures(t *testing.T) {
	g := NewWithT(t)
	req := request("backup")
	r := NewRetries()

	result, err := r.Result(req, nil, true, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(time.Minute))

	// A failure the reconcile returned without Result: the backoff alone.
	g.Expect(r.When(req)).To(Equal(5 * time.Millisecond))
	g.Expect(r.When(req)).To(Equal(10 * time.Millisecond))
	g.Expect(r.NumRequeues(req)).To(Equal(2))

	// A plan is used once: the next failure without Result backs off.
	_, _ = r.Result(req, errRefused, false, time.Hour)
	g.Expect(r.When(req)).To(Equal(time.Hour))
	g.Expect(r.When(req)).To(Equal(20 * time.Millisecond))

	r.Forget(req)
	g.Expect(r.NumRequeues(req)).To(BeZero())
	g.Expect(r.When(req)).To(Equal(5 * time.Millisecond))
}
