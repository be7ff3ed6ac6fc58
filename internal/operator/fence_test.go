package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock is a resourcelock.Interface that succeeds or fails on demand.
type fakeLock struct {
	resourcelock.Interface
	fail error
}

func (l *fakeLock) Identity() string { return "me" }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.fail
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.fail
}

func TestLeaseGuard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	lock := &fakeLock{}
	guard := NewLeaseGuard(lock, clock)

	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("does not hold")), "before acquiring")

	g.Expect(guard.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(guard.Holding()).To(Succeed())

	clock.SetTime(start.Add(2 * time.Second))
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	clock.SetTime(start.Add(11 * time.Second))
	g.Expect(guard.Holding()).To(Succeed(), "9 s after the last renewal")

	// Frozen: renewals stop (or fail); past the renew deadline it must stop
	// writing, before a standby can take over at 15 s.
	lock.fail = errors.New("connection refused")
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).NotTo(Succeed())
	clock.SetTime(start.Add(12*time.Second + time.Millisecond))
	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("last renewed 10.001s ago")))

	// Released on shutdown: the holder is emptied.
	lock.fail = nil
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"})).To(Succeed())
	g.Expect(guard.Holding()).To(Succeed())
	g.Expect(guard.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""})).To(Succeed())
	g.Expect(guard.Holding()).To(MatchError(ContainSubstring("does not hold")))
}
