package instance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A renewal call that hangs does not stretch the lease: it ends by the
// time the primary must fence (the lease's 10 s less the 3 s margin), and
// the fence is judged by the time after it, not before. Here every call
// hangs until its context's deadline, and the first is made 6 s after the
// last renewal: the primary must fence at 7 s, not a call later.
func TestHungRenewalDoesNotStretchTheLease(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			// The call hangs until its deadline, in the fake clock's time.
			if d, ok := ctx.Deadline(); ok {
				clk.Step(time.Until(d).Round(100 * time.Millisecond))
			}
			return errors.New("the API server does not answer")
		},
	}).Build()
	m := &Manager{
		opts:  Options{RenewInterval: 2 * time.Second, LeaseDuration: 10 * time.Second},
		log:   testr.New(t),
		clock: clk,
		lease: leaseKeeper{client: c, key: types.NamespacedName{Namespace: "ns", Name: "db-primary"}, holder: "db-1",
			duration: 10 * time.Second, clock: clk, renewed: start},
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); m.keepLease(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("keepLease never waited on its ticker")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(6 * time.Second)
	for !m.selfFenced.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("not fenced at %s after the last renewal, with the lease lapsing at 10 s", clk.Now().Sub(start))
		}
		time.Sleep(time.Millisecond)
	}
	// A fenced manager makes no more calls: the clock stands where it
	// fenced.
	if at := clk.Now().Sub(start); at > 7*time.Second {
		t.Errorf("fenced %s after the last renewal, past the 7 s the margin allows", at)
	}
	if m.lease.held(clk.Now()) {
		t.Error("the manager still counts the lease as held after fencing")
	}
}
