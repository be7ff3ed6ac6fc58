package instance

import (
	"context"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// instanceState is what the manager saw of its PostgreSQL at one moment.
type instanceState struct {
	initialized bool
	// ranAsPrimary: the data on disk is a primary's (read while stopped).
	ranAsPrimary bool
	running      bool
	ready        bool
	// state is PostgreSQL's own account, while it answers.
	state postgres.State
	// streaming: a standby's WAL receiver streams; receiving: it runs at
	// all (streaming, or connecting, or waiting to).
	streaming, receiving bool
}

// observe reads the state of the instance: whether postgres runs (a crash
// is noticed here), answers, and where it is.
func (m *Manager) observe(ctx context.Context, now time.Time) instanceState {
	var s instanceState
	s.initialized = m.pg.Initialized()
	if m.proc != nil {
		select {
		case <-m.proc.Exited():
			switch {
			case m.selfFenced.Load():
				m.log.Info("PostgreSQL stopped: fenced")
			case !m.stopping:
				m.log.Info("PostgreSQL exited; it is started again (crash recovery)", "error", errString(m.proc.Wait()))
			}
			if recovering, err := m.pg.RecoveryConfigured(); err == nil && recovering {
				m.recoveryStopped, m.recoveryStoppedAt = m.proc.LastFatal(), now
			}
			m.proc = nil
			m.pid.Store(0)
		default:
			s.running = true
		}
	}
	if !s.running {
		if s.initialized {
			primary, err := m.pg.RanAsPrimary(ctx)
			s.ranAsPrimary = err == nil && primary
		}
		m.notStreamingSince = time.Time{}
		m.lastRead = lastRead{}
		return s
	}
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	state, err := m.pg.State(readCtx)
	if err != nil {
		if m.lastRead.failingSince.IsZero() {
			m.lastRead.failingSince = now
		}
		if !m.lastRead.stands(now) {
			return s
		}
		// One slow or failed read is no failure: the last reading stands
		// for a while, so that a moment's stall does not fail over a
		// healthy primary.
		s.ready, s.state, s.streaming, s.receiving = true, *m.lastRead.state, m.lastRead.streaming, m.lastRead.receiving
		return s
	}
	s.ready = true
	s.state = state
	m.lastRead = lastRead{state: &state}
	if state.InRecovery {
		status := m.walReceiverStatus(readCtx)
		s.streaming, s.receiving = status == "streaming", status != ""
		m.lastRead.streaming, m.lastRead.receiving = s.streaming, s.receiving
		switch {
		case s.streaming:
			m.notStreamingSince = time.Time{}
		case m.notStreamingSince.IsZero():
			m.notStreamingSince = now
		}
	}
	return s
}

// unreadyAfter is how long PostgreSQL's state must fail to be read, in a
// row, before a running instance counts as not ready: the instance's role,
// and for a primary its place, does not hang on one slow query.
const unreadyAfter = 5 * time.Second

// lastRead is the manager's last good reading of a running PostgreSQL.
type lastRead struct {
	state                *postgres.State
	streaming, receiving bool
	// failingSince is when reads began to fail, zero while they succeed.
	failingSince time.Time
}

// stands tells whether the last good reading still stands at now, reads
// having failed since failingSince.
func (r lastRead) stands(now time.Time) bool {
	return r.state != nil && now.Sub(r.failingSince) < unreadyAfter
}

// walReceiverStatus is the status of the standby's WAL receiver
// (streaming, starting, ...), "" when none runs; "unknown" when it
// cannot be read, which a standby's report must take for one that runs.
func (m *Manager) walReceiverStatus(ctx context.Context) string {
	conn, err := m.pg.Connect(ctx, "postgres")
	if err != nil {
		return "unknown"
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var status string
	if err := conn.QueryRow(ctx, "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), '')").Scan(&status); err != nil {
		return "unknown"
	}
	return status
}

// local is the instance's side of next.
func (m *Manager) local(s instanceState) local {
	l := local{
		initialized:       s.initialized,
		primaryData:       s.ranAsPrimary || (s.running && s.ready && !s.state.InRecovery),
		running:           s.running,
		ready:             s.ready,
		streaming:         s.streaming,
		notStreamingSince: m.notStreamingSince,
		detachedUnder:     m.detachedUnder,
		received:          s.state.ReceivedLSN,
		replayed:          s.state.ReplayedLSN,
		holdsLease:        m.lease.held(m.clock.Now()),
		following:         m.following,
	}
	if s.initialized {
		recovering, err := m.pg.RecoveryConfigured()
		l.recovering = err == nil && recovering
		if l.recovering {
			l.recoveryStopped, l.recoveryStoppedAt = m.recoveryStopped, m.recoveryStoppedAt
		}
	}
	if s.running && !s.ready {
		// Starting or recovering: its role is the one its files give.
		standby, err := m.pg.StandbyConfigured()
		l.primaryData = err == nil && !standby && !l.recovering
	}
	return l
}

// view is the cluster's side of next, from the watched PostgresCluster and
// Lease.
func (m *Manager) view(ctx context.Context, pg *v1alpha1.PostgresCluster, now time.Time) view {
	if pg == nil || now.Sub(m.lastAPIAt()) > apiFreshFor {
		return view{}
	}
	v := view{
		fresh:        true,
		target:       pg.Status.TargetPrimary,
		current:      pg.Status.CurrentPrimary,
		epoch:        pg.Status.PromotionEpoch,
		fencedBySpec: pgspec.FencedOnPurpose(pg, m.opts.PodName),
		bootstrap:    pgspec.BootstrapOf(pg),
	}
	if v.current != "" && v.current == v.target {
		for _, i := range pg.Status.Instances {
			if i.Name == v.current && i.Role == v1alpha1.PostgresPrimaryRole && i.Ready {
				v.primaryReady = true
			}
		}
	}
	available, err := m.lease.available(ctx, now)
	if err != nil {
		// The API server stopped answering since the last success: the
		// view is as stale as the lease is unknown. Were an unread lease
		// taken for another's, a primary whose own renewals lapsed in an
		// outage would fence itself though nobody could take its place.
		return view{}
	}
	v.leaseAvailable = available
	if v.target == m.opts.PodName && v.current != "" && v.current != m.opts.PodName {
		v.handoverLSN = m.reporter.handoverOf(ctx, v.current)
	}
	return v
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
