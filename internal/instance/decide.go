package instance

import (
	"strings"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// local is what the instance manager knows of its own instance.
type local struct {
	// initialized: the data directory holds a database.
	initialized bool
	// primaryData: the data is a primary's (it ran as one and is not
	// configured as a standby), or the running server is out of recovery.
	primaryData bool
	// running: postgres runs; ready: it accepts connections.
	running, ready bool
	// recovering: the data is a base backup set up for archive recovery
	// (recovery.signal), which PostgreSQL promotes once it reached the
	// recovery target.
	recovering bool
	// recoveryStopped is why PostgreSQL last exited during the recovery
	// (its FATAL message), at recoveryStoppedAt; "" when it did not.
	recoveryStopped   string
	recoveryStoppedAt time.Time
	// streaming: a standby's WAL receiver streams from a primary.
	streaming bool
	// notStreamingSince: since when a running standby has not streamed.
	notStreamingSince time.Time
	// received and replayed: how far a standby received and replayed WAL.
	// After a restart nothing is received until it streams again, while
	// replayed covers what it received before.
	received, replayed postgres.LSN
	// holdsLease: this manager holds the primary's lease, by its last
	// successful renewal.
	holdsLease bool
	// following: the host the standby's primary_conninfo names.
	following string
	// detachedUnder: the promotion epoch under which the standby detached
	// from its primary for an election (DetachStandby); 0 for none.
	detachedUnder int64
}

// view is what the instance manager knows of its cluster, through the API
// server.
type view struct {
	// fresh: the cluster was read recently; without it the manager acts
	// only to keep the data safe.
	fresh bool
	// target and current are the cluster's status.targetPrimary and
	// currentPrimary; epoch its status.promotionEpoch.
	target, current string
	epoch           int64
	// fencedBySpec: spec.fencedInstances names this instance.
	fencedBySpec bool
	// primaryReady: the current primary is the target and the operator
	// routes writes to it (the status lists it ready).
	primaryReady bool
	// leaseAvailable: nobody else holds the lease (released, or not
	// renewed for its duration).
	leaseAvailable bool
	// bootstrap: where the cluster's first data comes from. From a volume
	// backup, the first instance finds it on its claim and never makes an
	// empty database.
	bootstrap pgspec.Bootstrap
	// handoverLSN: the shutdown position of the former primary during a
	// switchover, which the target must have received before it promotes;
	// 0 when none was reported.
	handoverLSN postgres.LSN
}

// election tells whether the operator is electing a new primary: the
// cluster had one and names no target. Standbys then detach from the
// former primary (stepDetach) before they report under the election's
// epoch: what they report is where their WAL ends, and a former primary
// that ran on because every standby streamed from it (the API server out
// of its reach alone) can then neither have a commit confirmed nor keep
// its exemption from fencing.
func (v view) election() bool { return v.target == "" && v.current != "" }

// fenceGrace is how long an elected standby whose WAL receiver stopped
// waits before it promotes, when the former primary did not hand over
// cleanly: time for a former primary that ran on, exempt from fencing while
// every standby streamed from it, to see that they stopped and fence.
const fenceGrace = 2 * time.Second

// step is what the instance manager does next.
type step int

const (
	stepWait step = iota
	stepInitDB
	stepClone
	stepAcquireLease
	stepStartPrimary
	stepStartStandby
	stepPromote
	// stepStepDown stops a primary that is no longer the target, cleanly,
	// then releases the lease.
	stepStepDown
	stepReleaseLease
	stepFence
	stepRewind
	stepFollow
	// stepRestore starts, as the new cluster's first primary, data restored
	// from a backup of another cluster (a replica's, stopped cleanly).
	stepRestore
	// stepDetach stops a standby's WAL receiver for an election: see
	// view.election.
	stepDetach
	// stepFetch makes the first instance's data from a base backup in the
	// object store, set up for archive recovery; stepRecover starts
	// PostgreSQL on it, to replay the archive up to the recovery target
	// and promote.
	stepFetch
	stepRecover
	stepRun
)

var stepNames = map[step]string{
	stepWait: "wait", stepInitDB: "initdb", stepClone: "clone", stepAcquireLease: "acquire the lease",
	stepStartPrimary: "start as primary", stepStartStandby: "start as standby", stepPromote: "promote",
	stepStepDown: "step down", stepReleaseLease: "release the lease", stepFence: "fence",
	stepRewind: "rewind", stepFollow: "follow the primary", stepRestore: "start from the restored backup", stepDetach: "detach from the primary", stepRun: "run",
	stepFetch: "fetch the base backup", stepRecover: "recover from the archive",
}

func (s step) String() string { return stepNames[s] }

// recoveryRetry is how long a recovery that stopped short of its target
// waits before it is started again.
const recoveryRetry = time.Minute

// rewindAfter is how long a standby may fail to stream from a ready primary
// before it is rewound: a standby that went past the primary's fork point
// (a former primary, or one that received WAL the new primary never had)
// cannot follow it until it is.
const rewindAfter = 15 * time.Second

// next decides the manager's next step from its own state and its view of
// the cluster: one step at a time, decided again after each. It is the
// instance's half of docs/postgres-design.md, and holds the split-brain
// guard: PostgreSQL runs as a primary only here, only on data that is a
// primary's or just promoted, only with the lease, and only for the target.
func next(me string, l local, v view, now time.Time) (step, string) {
	if v.fresh && v.fencedBySpec {
		switch {
		case l.running:
			return stepFence, "fenced by spec.fencedInstances"
		case l.holdsLease && v.target != me:
			return stepReleaseLease, "fenced, and no longer the target"
		}
		return stepWait, "fenced by spec.fencedInstances"
	}
	if !v.fresh {
		// Without the API server nothing changes role; the lease keeper
		// fences a primary that can no longer renew (see mustFence).
		if l.running {
			return stepRun, "the API server does not answer: keeping the current role"
		}
		return stepWait, "waiting for the API server"
	}

	if !l.initialized {
		switch {
		case v.target == me && v.current == "" && v.bootstrap == pgspec.BootstrapVolumeBackup:
			return stepWait, "waiting for the backup to be restored onto the claim"
		case v.target == me && v.current == "" && v.bootstrap == pgspec.BootstrapObjectStore:
			return stepFetch, "fetching the base backup from the object store"
		case v.target == me && v.current == "":
			return stepInitDB, "the first instance initializes the database"
		case v.primaryReady:
			return stepClone, "cloning the primary " + v.current
		}
		return stepWait, "waiting for a primary to clone"
	}

	if v.target == me {
		return nextAsTarget(l, v, now)
	}
	return nextAsFollower(me, l, v, now)
}

// nextAsTarget is the next step of the instance the operator wants as
// primary.
func nextAsTarget(l local, v view, now time.Time) (step, string) {
	if !l.holdsLease {
		if !v.leaseAvailable {
			if l.running && l.primaryData {
				// Someone else holds the lease: never accept writes beside
				// them.
				return stepFence, "another instance holds the primary's lease"
			}
			return stepWait, "waiting for the former primary to release the lease"
		}
		// A switchover's target still streams from the former primary and
		// receives its last WAL. One elected after it detached under the
		// election's epoch can receive nothing more: it waits for no
		// hand-over, which would never come (the former primary, restarted
		// and stepping down, wrote past what the standbys detached with).
		// Nothing it lacks was confirmed: a commit needs a standby's
		// confirmation, and each of the quorum had detached before the
		// election chose.
		awaitsHandover := l.detachedUnder == 0 || l.detachedUnder != v.epoch
		if !l.primaryData && awaitsHandover && v.handoverLSN > 0 && max(l.received, l.replayed) < v.handoverLSN {
			if !l.running {
				// Stopped since (a crash, a restart): what it received is
				// replayed once it runs again.
				return stepStartStandby, "starting the standby to replay the former primary's last WAL"
			}
			return stepWait, "receiving the former primary's last WAL before promoting"
		}
		return stepAcquireLease, "taking the primary's lease"
	}
	switch {
	case l.recovering && !l.running && l.recoveryStopped != "" && now.Sub(l.recoveryStoppedAt) < recoveryRetry:
		// A target beyond the archive's end stops recovery before it is
		// reached: said, then tried again, in case the source archives on.
		why := "PostgreSQL stopped recovering: " + l.recoveryStopped
		if strings.Contains(l.recoveryStopped, "recovery ended before configured recovery target was reached") {
			why = "the recovery target is after the end of the archive (" + l.recoveryStopped + "): tried again every minute, in case the source archives on"
		}
		return stepWait, why
	case l.recovering && !l.running:
		return stepRecover, "recovering from the object store's archive"
	case l.recovering:
		// Never promoted by hand: PostgreSQL promotes at the recovery
		// target, and only it knows when that is reached.
		return stepWait, "replaying the archive up to the recovery target"
	case !l.primaryData && !l.running && v.current == "" && v.bootstrap == pgspec.BootstrapVolumeBackup:
		// The cluster never had a primary, starts from a backup, and this
		// instance holds data: the backup restored onto its claim. Other
		// standby data (a cluster made again over kept claims) starts as
		// a standby and is promoted below, on a timeline of its own, so
		// that the others' data can be rewound onto it.
		return stepRestore, "starting from the backup restored onto its claim"
	case l.primaryData && !l.running:
		return stepStartPrimary, "starting as primary"
	case l.primaryData:
		return stepRun, "primary"
	case !l.running:
		return stepStartStandby, "starting the standby that will be promoted"
	case l.streaming:
		// The former primary still sends WAL: it runs, so this instance
		// must not promote beside it; it steps down (it is no longer the
		// target) or fences itself as its lease lapses.
		return stepWait, "waiting for the former primary to stop"
	case v.handoverLSN == 0 && !l.notStreamingSince.IsZero() && now.Sub(l.notStreamingSince) < fenceGrace:
		// Not a clean hand-over: a former primary that ran on because
		// every standby streamed from it fences itself once they stopped.
		return stepWait, "giving the former primary time to fence itself"
	}
	return stepPromote, "promoting"
}

// nextAsFollower is the next step of an instance that is not the target.
func nextAsFollower(me string, l local, v view, now time.Time) (step, string) {
	switch {
	case l.running && l.primaryData:
		return stepStepDown, "no longer the primary: stepping down"
	case l.holdsLease:
		return stepReleaseLease, "no longer the primary"
	case !v.primaryReady:
		switch {
		case l.running && !l.primaryData && v.election() && l.detachedUnder != v.epoch:
			// A standby that still takes WAL from the failed primary could
			// confirm commits after it reported where its WAL ends.
			return stepDetach, "an election: no more WAL from the former primary " + v.current
		case l.running && !l.primaryData:
			return stepRun, "standby, waiting for a primary"
		case !l.primaryData && v.election():
			// An election counts only the standbys that report how far
			// their WAL goes, which stopped data cannot tell: started as a
			// standby it replays what it holds and reports that.
			return stepStartStandby, "starting as standby, so that the election sees its WAL position"
		}
		return stepWait, "waiting for a primary"
	case l.primaryData:
		// A former primary never starts as a second one: it is rewound
		// onto the current primary first.
		return stepRewind, "rewinding the former primary onto " + v.current
	case l.following != v.current:
		return stepFollow, "following the primary " + v.current
	case !l.running:
		return stepStartStandby, "starting as standby of " + v.current
	case !l.streaming && !l.notStreamingSince.IsZero() && now.Sub(l.notStreamingSince) > rewindAfter:
		return stepRewind, "not streaming from " + v.current + ": rewinding"
	}
	return stepRun, "standby of " + v.current
}

// mustFence tells whether a primary that could not renew its lease since
// lastRenewal must stop accepting writes now: before the lease lapses
// (margin early), unless every other instance still streams from it (the
// API server is down, not the network: nobody can take the lease either).
func mustFence(now, lastRenewal time.Time, duration, margin time.Duration, allStreaming bool) bool {
	return !allStreaming && !now.Before(lastRenewal.Add(duration-margin))
}
