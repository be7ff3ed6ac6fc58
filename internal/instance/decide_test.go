package instance

import (
	"slices"
	"testing"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	standby := local{initialized: true, running: true, ready: true, streaming: true, following: "db-1"}
	primary := local{initialized: true, primaryData: true, running: true, ready: true, holdsLease: true}
	healthy := view{fresh: true, target: "db-1", current: "db-1", primaryReady: true}
	tests := []struct {
		name string
		me   string
		l    local
		v    view
		now  time.Duration
		want step
	}{
		{"the first instance of a new cluster initializes", "db-1", local{}, view{fresh: true, target: "db-1"}, 0, stepInitDB},
		{"... unless the cluster starts from a backup: it never makes an empty database", "db-1", local{}, view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapVolumeBackup}, 0, stepWait},
		{"... from an object store, it fetches a base backup", "db-1", local{}, view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 0, stepFetch},
		{"... takes the lease before it recovers", "db-1", local{initialized: true, recovering: true}, view{fresh: true, target: "db-1", leaseAvailable: true, bootstrap: pgspec.BootstrapObjectStore}, 0, stepAcquireLease},
		{"... recovers from the archive with the lease", "db-1", local{initialized: true, recovering: true, holdsLease: true}, view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 0, stepRecover},
		{"... and never promotes by hand while it replays: PostgreSQL promotes at the target", "db-1", local{initialized: true, recovering: true, running: true, ready: true, holdsLease: true},
			view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 0, stepWait},
		{"... once promoted (recovery.signal gone) it runs as the primary", "db-1", local{initialized: true, primaryData: true, running: true, ready: true, holdsLease: true},
			view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 0, stepRun},
		{"... a recovery that stopped short of its target waits, saying why", "db-1",
			local{initialized: true, recovering: true, holdsLease: true, recoveryStopped: "FATAL:  recovery ended before configured recovery target was reached", recoveryStoppedAt: t0},
			view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 30 * time.Second, stepWait},
		{"... and tries again a minute later", "db-1",
			local{initialized: true, recovering: true, holdsLease: true, recoveryStopped: "FATAL:  recovery ended before configured recovery target was reached", recoveryStoppedAt: t0},
			view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 61 * time.Second, stepRecover},
		{"... and the others wait for it to clone", "db-2", local{}, view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapObjectStore}, 0, stepWait},
		{"another waits for a primary", "db-2", local{}, view{fresh: true, target: "db-1"}, 0, stepWait},
		{"and clones it once it is ready", "db-2", local{}, healthy, 0, stepClone},
		{"an empty instance never initializes a cluster that had a primary", "db-1", local{}, view{fresh: true, target: "db-1", current: "db-3"}, 0, stepWait},
		{"the target takes the lease before it starts", "db-1", local{initialized: true, primaryData: true}, view{fresh: true, target: "db-1", leaseAvailable: true}, 0, stepAcquireLease},
		{"a new cluster's first instance with restored data starts from it", "db-1", local{initialized: true, holdsLease: true}, view{fresh: true, target: "db-1", bootstrap: pgspec.BootstrapVolumeBackup}, 0, stepRestore},
		{"standby data kept from an earlier cluster of the name starts as a standby", "db-1", local{initialized: true, holdsLease: true}, view{fresh: true, target: "db-1"}, 0, stepStartStandby},
		{"... and is promoted, on a timeline of its own", "db-1", local{initialized: true, running: true, ready: true, holdsLease: true}, view{fresh: true, target: "db-1"}, 0, stepPromote},
		{"with the lease, it starts as primary", "db-1", local{initialized: true, primaryData: true, holdsLease: true}, view{fresh: true, target: "db-1"}, 0, stepStartPrimary},
		{"a target whose lease someone else holds does not start", "db-1", local{initialized: true, primaryData: true}, view{fresh: true, target: "db-1"}, 0, stepWait},
		{"a running primary that lost its lease to another fences", "db-1", local{initialized: true, primaryData: true, running: true}, view{fresh: true, target: "db-1"}, 0, stepFence},
		{"a primary with its lease runs", "db-1", primary, healthy, 0, stepRun},
		{"the elected standby takes the lease", "db-2", standby, view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true}, 0, stepAcquireLease},
		{"... not before it received the former primary's last WAL", "db-2", local{initialized: true, running: true, received: 100},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200}, 0, stepWait},
		{"... starts again if it stopped before it replayed it (received counts from its restart)", "db-2", local{initialized: true},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200}, 0, stepStartStandby},
		{"... and takes the lease once it replayed it, though it receives nothing", "db-2", local{initialized: true, running: true, ready: true, replayed: 200},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200}, 0, stepAcquireLease},
		{"... unless it detached for the election that chose it: no hand-over reaches it (the fault run's seed 20261207, #11)", "db-2",
			local{initialized: true, running: true, ready: true, received: 100, detachedUnder: 3},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200, epoch: 3}, 0, stepAcquireLease},
		{"... nor, stopped since, does it start to replay it", "db-2", local{initialized: true, detachedUnder: 3},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200, epoch: 3}, 0, stepAcquireLease},
		{"... but one that detached in an earlier election waits", "db-2", local{initialized: true, running: true, ready: true, received: 100, detachedUnder: 2},
			view{fresh: true, target: "db-2", current: "db-1", leaseAvailable: true, handoverLSN: 200, epoch: 3}, 0, stepWait},
		{"... and promotes once nothing streams to it", "db-2", local{initialized: true, running: true, holdsLease: true}, view{fresh: true, target: "db-2", current: "db-1"}, 0, stepPromote},
		{"... never while the former primary still streams to it", "db-2", local{initialized: true, running: true, holdsLease: true, streaming: true},
			view{fresh: true, target: "db-2", current: "db-1"}, 0, stepWait},
		{"a primary that is no longer the target steps down", "db-1", primary, view{fresh: true, target: "db-2", current: "db-1"}, 0, stepStepDown},
		{"... also during an election", "db-1", primary, view{fresh: true, current: "db-1"}, 0, stepStepDown},
		{"a former primary is rewound, never started as a second primary", "db-1", local{initialized: true, primaryData: true},
			view{fresh: true, target: "db-2", current: "db-2", primaryReady: true}, 0, stepRewind},
		{"... and waits while there is no primary", "db-1", local{initialized: true, primaryData: true}, view{fresh: true, target: "db-2", current: "db-1"}, 0, stepWait},
		{"a standby detaches from the former primary during an election", "db-3", standby,
			view{fresh: true, current: "db-1", epoch: 2}, 0, stepDetach},
		{"... once: detached under the election's epoch, it runs", "db-3", local{initialized: true, running: true, ready: true, detachedUnder: 2},
			view{fresh: true, current: "db-1", epoch: 2}, 0, stepRun},
		{"... and again in a later election", "db-3", local{initialized: true, running: true, ready: true, detachedUnder: 2},
			view{fresh: true, current: "db-2", epoch: 3}, 0, stepDetach},
		{"the elected standby whose WAL receiver stopped a moment ago gives the former primary time to fence", "db-2",
			local{initialized: true, running: true, holdsLease: true, notStreamingSince: t0}, view{fresh: true, target: "db-2", current: "db-1"},
			time.Second, stepWait},
		{"... and promotes after it", "db-2", local{initialized: true, running: true, holdsLease: true, notStreamingSince: t0},
			view{fresh: true, target: "db-2", current: "db-1"}, fenceGrace, stepPromote},
		{"... at once after a clean hand-over", "db-2", local{initialized: true, running: true, holdsLease: true, notStreamingSince: t0},
			view{fresh: true, target: "db-2", current: "db-1", handoverLSN: 200}, time.Second, stepPromote},
		{"a stopped standby starts during an election, so that its WAL position counts", "db-3", local{initialized: true, following: "db-1"},
			view{fresh: true, current: "db-1"}, 0, stepStartStandby},
		{"... not while the primary keeps its place (waking from hibernation)", "db-3", local{initialized: true, following: "db-1"},
			view{fresh: true, target: "db-1", current: "db-1"}, 0, stepWait},
		{"... nor a stopped former primary", "db-1", local{initialized: true, primaryData: true}, view{fresh: true, current: "db-1"}, 0, stepWait},
		{"a standby follows a new primary", "db-3", standby, view{fresh: true, target: "db-2", current: "db-2", primaryReady: true}, 0, stepFollow},
		{"a standby that cannot stream is rewound after a while", "db-3", local{initialized: true, running: true, following: "db-1", notStreamingSince: t0},
			healthy, rewindAfter + time.Second, stepRewind},
		{"... not at once", "db-3", local{initialized: true, running: true, following: "db-1", notStreamingSince: t0}, healthy, time.Second, stepRun},
		{"fenced by spec: PostgreSQL stops", "db-1", primary, view{fresh: true, target: "db-1", current: "db-1", fencedBySpec: true}, 0, stepFence},
		{"without the API server nothing changes role", "db-2", standby, view{}, 0, stepRun},
		{"... nor starts", "db-1", local{initialized: true, primaryData: true}, view{}, 0, stepWait},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := next(tc.me, tc.l, tc.v, t0.Add(tc.now))
			if got != tc.want {
				t.Errorf("next = %s (%s), want %s", got, why, tc.want)
			}
		})
	}
}

func TestMustFence(t *testing.T) {
	renewed := t0
	for _, tc := range []struct {
		name         string
		now          time.Duration
		allStreaming bool
		want         bool
	}{
		{"renewed recently", 2 * time.Second, false, false},
		{"close to the lapse", 8 * time.Second, false, true},
		{"close to the lapse, every replica streaming (the API server is down)", 8 * time.Second, true, false},
		{"long past the lapse, every replica streaming", time.Minute, true, false},
	} {
		if got := mustFence(t0.Add(tc.now), renewed, 10*time.Second, 2*time.Second, tc.allStreaming); got != tc.want {
			t.Errorf("%s: mustFence = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEveryStandbyStreams: the split-brain guard's "every replica still
// streams from me" counts the cluster's own standbys, by application name,
// never another WAL sender's peer in place of one that stopped.
func TestEveryStandbyStreams(t *testing.T) {
	streaming := func(name string) postgres.Standby { return postgres.Standby{ApplicationName: name, State: "streaming"} }
	want := []string{"db-2", "db-3"}
	for _, tc := range []struct {
		name  string
		peers []postgres.Standby
		want  bool
	}{
		{"both standbys stream", []postgres.Standby{streaming("db-2"), streaming("db-3")}, true},
		{"one standby stopped; a pg_receivewal streams in its place", []postgres.Standby{streaming("db-2"), streaming("pg_receivewal")}, false},
		{"one standby stopped; a base backup runs in its place", []postgres.Standby{streaming("db-2"), {ApplicationName: "pg_basebackup", State: "backup"}}, false},
		{"one standby still catches up", []postgres.Standby{streaming("db-2"), {ApplicationName: "db-3", State: "catchup"}}, false},
		{"nothing streams", nil, false},
	} {
		if got := everyStandbyStreams(want, tc.peers); got != tc.want {
			t.Errorf("%s: everyStandbyStreams = %v, want %v", tc.name, got, tc.want)
		}
	}
	if everyStandbyStreams(nil, []postgres.Standby{streaming("pg_receivewal")}) {
		t.Error("a cluster of one instance has no standby that could vouch for the primary")
	}
}

// TestLastReadStands: a running PostgreSQL whose state cannot be read keeps
// its last reading for unreadyAfter, then counts as not ready; with no
// reading yet (it just started) it is not ready at once.
func TestLastReadStands(t *testing.T) {
	reading := &postgres.State{}
	for _, tc := range []struct {
		name string
		r    lastRead
		now  time.Duration
		want bool
	}{
		{"the first read fails", lastRead{state: reading, failingSince: t0}, 0, true},
		{"reads failed for 2 s", lastRead{state: reading, failingSince: t0}, 2 * time.Second, true},
		{"reads failed for as long as unreadyAfter", lastRead{state: reading, failingSince: t0}, unreadyAfter, false},
		{"never read since it started", lastRead{failingSince: t0}, 0, false},
	} {
		if got := tc.r.stands(t0.Add(tc.now)); got != tc.want {
			t.Errorf("%s: stands = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReportEpoch: during an election a running standby reports under the
// election's epoch only once it detached from the former primary and its
// WAL receiver stopped: until then the WAL positions it reports may still
// move, and the election must not count them.
func TestReportEpoch(t *testing.T) {
	election := v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 3}
	healthy := v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 3}
	standby := instanceState{initialized: true, running: true, ready: true, state: postgres.State{InRecovery: true}}
	receiving := standby
	receiving.receiving = true
	for _, tc := range []struct {
		name     string
		st       v1alpha1.PostgresClusterStatus
		s        instanceState
		detached int64
		want     int64
	}{
		{"no election", healthy, receiving, 0, 3},
		{"an election, the standby not detached yet", election, standby, 0, 2},
		{"an election, detached under an earlier one", election, standby, 2, 2},
		{"an election, detached, its WAL receiver still running", election, receiving, 3, 2},
		{"an election, detached, its WAL receiver stopped", election, standby, 3, 3},
		{"an election, the standby still starting", election, instanceState{initialized: true, running: true}, 0, 2},
		{"an election, stopped data", election, instanceState{initialized: true}, 0, 3},
	} {
		if got := reportEpoch(tc.st, "db-2", tc.s, tc.detached); got != tc.want {
			t.Errorf("%s: reportEpoch = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSynchronousOf: required waits for n of every standby; preferred for
// those that stream, n at most, and for none while none streams.
func TestSynchronousOf(t *testing.T) {
	standbys := []string{"db-2", "db-3"}
	streaming := func(names ...string) []postgres.Standby {
		var out []postgres.Standby
		for _, n := range names {
			out = append(out, postgres.Standby{ApplicationName: n, State: "streaming"})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		n          int
		durability v1alpha1.PostgresDataDurability
		peers      []postgres.Standby
		want       postgres.Synchronous
	}{
		{"asynchronous", 0, v1alpha1.DurabilityPreferred, streaming("db-2"), postgres.Synchronous{}},
		{"required, one standby down", 1, v1alpha1.DurabilityRequired, streaming("db-2"), postgres.Synchronous{Number: 1, Standbys: standbys}},
		{"required by default", 2, "", nil, postgres.Synchronous{Number: 2, Standbys: standbys}},
		{"preferred, both stream", 1, v1alpha1.DurabilityPreferred, streaming("db-2", "db-3"), postgres.Synchronous{Number: 1, Standbys: standbys}},
		{"preferred, one down: the other", 2, v1alpha1.DurabilityPreferred, append(streaming("db-3"), postgres.Standby{ApplicationName: "db-2", State: "catchup"}),
			postgres.Synchronous{Number: 1, Standbys: []string{"db-3"}}},
		{"preferred, none streams: commits wait for none", 1, v1alpha1.DurabilityPreferred, streaming("pg_receivewal"), postgres.Synchronous{}},
	} {
		got := synchronousOf(tc.n, standbys, tc.durability, tc.peers)
		if got.Number != tc.want.Number || !slices.Equal(got.Standbys, tc.want.Standbys) {
			t.Errorf("%s: synchronousOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
