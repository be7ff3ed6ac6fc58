package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/instance/postgres"
)

// leaseKeeper takes, renews and releases the primary's Lease. Every write
// is guarded by the Lease's resourceVersion, so that two instances can
// never both take it.
type leaseKeeper struct {
	client   client.Client
	key      types.NamespacedName
	holder   string
	duration time.Duration
	clock    clock.PassiveClock

	// mu serializes the writes of the Lease, from the manager's loop (take,
	// release) and from its renewals.
	mu sync.Mutex
	// renewed is when this manager last renewed (or took) the lease; zero
	// when it does not hold it.
	renewed time.Time
}

func (k *leaseKeeper) lastRenewal() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.renewed
}

func (k *leaseKeeper) drop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.renewed = time.Time{}
}

// errLeaseTaken is returned when another instance holds the lease.
var errLeaseTaken = errors.New("another instance holds the primary's lease")

// errRenewalTooLate stands for a renewal not tried: the time to fence by
// came before it could be.
var errRenewalTooLate = errors.New("the lease was not renewed before the time to fence by")

// held tells whether this manager holds the lease at now, by its own last
// renewal.
func (k *leaseKeeper) held(now time.Time) bool {
	renewed := k.lastRenewal()
	return !renewed.IsZero() && now.Before(renewed.Add(k.duration))
}

// available tells whether this manager may take the lease: nobody holds it,
// its holder released it or let it lapse, or it is this manager's. An
// error says that nobody knows: a lease that cannot be read is no sign
// that another instance holds it.
func (k *leaseKeeper) available(ctx context.Context, now time.Time) (bool, error) {
	l := &coordinationv1.Lease{}
	if err := k.client.Get(ctx, k.key, l); err != nil {
		return false, fmt.Errorf("get the primary's lease: %w", err)
	}
	return mayTake(l, k.holder, now), nil
}

// mayTake tells whether holder may take l at now.
func mayTake(l *coordinationv1.Lease, holder string, now time.Time) bool {
	current := ptr.Deref(l.Spec.HolderIdentity, "")
	if current == "" || current == holder || l.Spec.RenewTime == nil {
		return true
	}
	duration := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
	return !now.Before(l.Spec.RenewTime.Add(duration))
}

// acquire takes the lease, or renews it when this manager holds it.
func (k *leaseKeeper) acquire(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	l := &coordinationv1.Lease{}
	if err := k.client.Get(ctx, k.key, l); err != nil {
		return fmt.Errorf("get the primary's lease: %w", err)
	}
	now := k.clock.Now()
	if !mayTake(l, k.holder, now) {
		return errLeaseTaken
	}
	stamp := metav1.NewMicroTime(now)
	if ptr.Deref(l.Spec.HolderIdentity, "") != k.holder {
		l.Spec.AcquireTime = &stamp
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.HolderIdentity = ptr.To(k.holder)
	l.Spec.RenewTime = &stamp
	l.Spec.LeaseDurationSeconds = ptr.To(int32(k.duration / time.Second))
	if err := k.client.Update(ctx, l); err != nil {
		return fmt.Errorf("take the primary's lease: %w", err)
	}
	k.renewed = now
	return nil
}

// release gives the lease up, so that a successor need not wait for it to
// lapse.
func (k *leaseKeeper) release(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	l := &coordinationv1.Lease{}
	if err := k.client.Get(ctx, k.key, l); err != nil {
		return fmt.Errorf("get the primary's lease: %w", err)
	}
	k.renewed = time.Time{}
	if ptr.Deref(l.Spec.HolderIdentity, "") != k.holder {
		return nil
	}
	l.Spec.HolderIdentity = nil
	l.Spec.RenewTime = nil
	if err := k.client.Update(ctx, l); err != nil {
		return fmt.Errorf("release the primary's lease: %w", err)
	}
	return nil
}

// keepLease renews the lease while the manager holds it, in a goroutine of
// its own so that no step of the manager's loop (a slow rewind, a write
// waiting for a synchronous standby) can delay a renewal or a fencing.
// When it cannot renew, it fences the primary before the lease lapses,
// unless every other instance still streams from it (the API server is
// down, not the network: nobody can take the lease either). After each
// look it arms the watchdog, which fences in its stead should this
// goroutine stop.
func (m *Manager) keepLease(ctx context.Context) {
	ticker := m.clock.NewTicker(m.opts.RenewInterval / 4)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		m.renewOrFence(ctx)
		m.syncWatchdog()
	}
}

// renewOrFence renews the lease when it is due, and fences the primary when
// it could not and must.
func (m *Manager) renewOrFence(ctx context.Context) {
	renewed := m.lease.lastRenewal()
	now := m.clock.Now()
	if renewed.IsZero() || now.Sub(renewed) < m.opts.RenewInterval {
		return
	}
	// A renewal that hangs must not carry the primary past the time it
	// must fence by: the call ends by then, and what follows is judged by
	// the time after it. Past that time a renewal is tried only while
	// every standby still streams from this primary (see mustFence): the
	// API server is down, and a renewal is how the primary learns that it
	// is back.
	fenceBy := renewed.Add(m.opts.LeaseDuration - fenceMargin)
	timeout := min(m.opts.RenewInterval, fenceBy.Sub(now))
	if timeout <= 0 {
		timeout = m.opts.RenewInterval
	}
	err := errRenewalTooLate
	if now.Before(fenceBy) || m.allStreaming(ctx) {
		renewCtx, cancel := context.WithTimeout(ctx, timeout)
		err = m.lease.acquire(renewCtx)
		cancel()
	}
	switch {
	case err == nil:
		m.markAPI()
		return
	case errors.Is(err, errLeaseTaken):
		m.log.Info("The primary's lease was taken by another instance: fencing")
		m.lease.drop()
		m.fence()
		return
	}
	vouched := m.allStreaming(ctx) // read before the clock: it may take a second
	now = m.clock.Now()
	if mustFence(now, renewed, m.opts.LeaseDuration, fenceMargin, vouched) {
		m.log.Info("Fencing: the primary's lease cannot be renewed and not every replica streams from it", "error", err.Error())
		m.lease.drop()
		m.fence()
		return
	}
	if vouched && !now.Before(fenceBy) {
		// Running on past the time to fence by, on the standbys' word:
		// the watchdog gives it until the next look, and a little more.
		m.exemptUntil = now.Add(m.opts.RenewInterval + watchdogSlack)
	}
}

// syncWatchdog arms the watchdog for the PostgreSQL of a manager that
// holds the lease, until the time it must fence by (or, running on past it
// on its standbys' word, until the next look) and watchdogSlack more, so
// that the manager fences first when it can; it disarms it otherwise.
func (m *Manager) syncWatchdog() {
	if m.watchdog == nil {
		return
	}
	renewed := m.lease.lastRenewal()
	pid := int(m.pid.Load())
	var want watchdogArming
	if !renewed.IsZero() && pid > 0 {
		want = watchdogArming{until: renewed.Add(m.opts.LeaseDuration - fenceMargin + watchdogSlack), pid: pid}
		if m.exemptUntil.After(want.until) {
			want.until = m.exemptUntil
		}
	}
	if want == m.armedFor {
		return
	}
	var err error
	if want.pid == 0 {
		err = m.watchdog.disarm()
	} else {
		err = m.watchdog.arm(want.until.Sub(m.clock.Now()), want.pid)
	}
	if err != nil {
		m.log.Error(err, "Watchdog not armed")
		return
	}
	m.armedFor = want
}

// allStreaming tells whether every other instance of the cluster, as last
// seen, streams from this primary, asking PostgreSQL now.
func (m *Manager) allStreaming(ctx context.Context) bool {
	want := m.expectedStandbys.Load()
	if want == nil {
		return false
	}
	readCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	state, err := m.pg.State(readCtx)
	if err != nil || state.InRecovery {
		return false
	}
	return everyStandbyStreams(*want, state.Standbys)
}

// everyStandbyStreams tells whether each of the cluster's standbys (by
// application name) streams from the primary. Other WAL senders' peers,
// a pg_basebackup or a pg_receivewal, are no instance of the cluster: that
// they still reach the primary says nothing of whether the standbys do.
func everyStandbyStreams(want []string, peers []postgres.Standby) bool {
	if len(want) == 0 {
		return false
	}
	for _, name := range want {
		if !slices.ContainsFunc(peers, func(p postgres.Standby) bool { return p.ApplicationName == name && p.State == "streaming" }) {
			return false
		}
	}
	return true
}

// fence stops a running primary at once with a fast shutdown (clients are
// disconnected, no write is accepted), from any goroutine: the manager's
// loop sees postgres exit and does not start it again until it holds the
// lease.
func (m *Manager) fence() {
	m.selfFenced.Store(true)
	if pid := m.pid.Load(); pid > 0 {
		if err := syscall.Kill(int(pid), syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
			m.log.Error(err, "Fencing: signal PostgreSQL", "pid", pid)
		}
	}
}

// stopFast stops postgres with a fast shutdown: clients are disconnected at
// once, and the last WAL goes to the connected standbys. The shutdown goes
// on when ctx ends (the manager got SIGTERM meanwhile): killing PostgreSQL
// halfway would lose the clean hand-over that the shutdown on SIGTERM
// would do all the same.
func (m *Manager) stopFast(ctx context.Context) {
	if m.proc == nil {
		return
	}
	m.stopping = true
	defer func() { m.stopping = false }()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := m.proc.Stop(stopCtx, postgres.StopFast); err != nil {
		m.log.Error(err, "Fast stop failed; stopping at once")
		_ = m.proc.Kill()
	}
	m.proc = nil
	m.pid.Store(0)
}
