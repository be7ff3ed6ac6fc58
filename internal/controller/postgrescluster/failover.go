package postgrescluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// electionTimeout bounds how long a failover waits for the replicas to
// report under its new epoch before it chooses among those that did.
const electionTimeout = 5 * time.Second

// switchoverTimeout bounds a switchover: a target that has not promoted by
// then (it never received the former primary's last WAL, it cannot reach
// the API server) is given up, and the former primary starts again.
const switchoverTimeout = time.Minute

// switchoverRetryDelay is how long a target that did not promote in time
// is not chosen again for a switchover: spec.primary that still names it
// would otherwise stop writes for switchoverTimeout, again and again.
const switchoverRetryDelay = 5 * time.Minute

// member is what the operator knows of one instance when it decides.
type member struct {
	name string
	// exists is true when the instance's pod exists, is not being deleted
	// and is not over (phase Failed or Succeeded).
	exists bool
	// over says how the instance's pod ended when it is over ("phase
	// Failed, reason Evicted"), for messages; "" otherwise.
	over string
	// report is the instance manager's last report; nil when there is none
	// (or it cannot be read).
	report *v1alpha1.PostgresInstanceReport
	// fencedBySpec is true when spec.fencedInstances names it.
	fencedBySpec bool
	// nodeDraining is true when the instance's node is cordoned.
	nodeDraining bool
	// specCurrent is true when the instance runs the pod the spec builds
	// now (its hash matches); election.current is the primary, a different
	// thing.
	specCurrent bool
	// keptData is true when the instance's claim is older than the
	// cluster: kept from an earlier PostgresCluster of the name, it may hold
	// that cluster's data.
	keptData bool
}

func (m member) reportsPrimary() bool {
	return m.report != nil && m.report.Role == v1alpha1.PostgresPrimaryRole && m.report.Ready && !m.report.Fenced
}

func (m member) reportsReplica() bool {
	return m.report != nil && m.report.Role == v1alpha1.PostgresReplicaRole && m.report.Ready && !m.report.Fenced
}

func (m member) fenced() bool {
	return m.fencedBySpec || (m.report != nil && m.report.Fenced)
}

// lease is the state of the primary's Lease as the operator read it.
type lease struct {
	holder   string
	renewed  time.Time
	duration time.Duration
}

// heldBy tells whether name holds the lease at now: it is its holder and
// renewed it within its duration.
func (l lease) heldBy(name string, now time.Time) bool {
	return name != "" && l.holder == name && now.Before(l.renewed.Add(l.duration))
}

// election is the operator's decision about the primary.
type election struct {
	phase v1alpha1.PostgresClusterPhase
	// current and target are status.currentPrimary and targetPrimary.
	current, target string
	epoch           int64
	failingSince    *time.Time
	electionStarted *time.Time
	// switchoverStarted is when the switchover under way began; while the
	// former primary starts again after one was given up, too.
	switchoverStarted *time.Time
	// abandoned is the last switchover given up, while its target is not
	// to be chosen again.
	abandoned *abandonedSwitchover
	// primary is the pod that gets role=primary (CLUSTER-rw routes to it),
	// "" for none; replicas get role=replica.
	primary  string
	replicas []string
	// reason and message say why the cluster is in phase, for conditions
	// and events.
	reason, message string
	// event, when set, is a change worth a Normal event: a failover or
	// switchover begun or done.
	event *transition
	// after is when to decide again without a watch event.
	after time.Duration
}

// abandonedSwitchover is status.abandonedSwitchover.
type abandonedSwitchover struct {
	target     string
	retryAfter time.Time
}

// transition is a change of the primary worth an event.
type transition struct {
	reason, message string
}

// decideInput is everything decide reads.
type decideInput struct {
	spec      v1alpha1.PostgresClusterSpec
	status    v1alpha1.PostgresClusterStatus
	clusterID string // the cluster's name, for instance names
	members   []member
	lease     lease
	now       time.Time
	// keptBeyond are the claims beyond spec.instances kept from an
	// earlier PostgresCluster of the name, read at the first start only.
	keptBeyond []string
	// withoutQuorum: a person accepted, for the failure of the current
	// primary, a failover without a quorum of synchronous standbys
	// (PostgresFailoverWithoutQuorumAnnotation).
	withoutQuorum bool
}

// decide chooses which instance is primary, from what the instances report
// and the lease: the whole of the operator's side of a failover, with no
// I/O, so that every case is a table test. See docs/postgres-design.md.
func decide(in decideInput) election {
	e := election{
		current: in.status.CurrentPrimary,
		target:  in.status.TargetPrimary,
		epoch:   in.status.PromotionEpoch,
	}
	if t := in.status.FailingSince; t != nil {
		e.failingSince = &t.Time
	}
	if t := in.status.ElectionStartedAt; t != nil {
		e.electionStarted = &t.Time
	}
	if t := in.status.SwitchoverStartedAt; t != nil {
		e.switchoverStarted = &t.Time
	}
	if a := in.status.AbandonedSwitchover; a != nil && in.now.Before(a.RetryAfter.Time) {
		e.abandoned = &abandonedSwitchover{target: a.Target, retryAfter: a.RetryAfter.Time}
	}
	byName := map[string]member{}
	for _, m := range in.members {
		byName[m.name] = m
	}

	if in.spec.Hibernate {
		e.phase, e.reason, e.message = v1alpha1.PostgresHibernated, v1alpha1.PostgresHibernatedReason,
			"spec.hibernate is true: no instance runs, every claim is kept"
		e.failingSince, e.electionStarted = nil, nil
		return e
	}

	// The first start: the first instance initializes the database (or
	// starts from the restored backup), unless claims kept from an earlier
	// cluster hold data.
	if e.target == "" && e.current == "" {
		if e.electionStarted == nil {
			e.epoch++
		}
		if !chooseFirstPrimary(in, &e) {
			return e
		}
	}

	switch {
	case e.target == "":
		decideElection(in, byName, &e)
	case e.current != e.target, e.electionStarted != nil, e.switchoverStarted != nil:
		// A promotion, or the former primary taking its place again after
		// an election it came back in or a switchover given up.
		awaitPromotion(in, byName, &e)
	default:
		watchPrimary(in, byName, &e)
	}
	routes(in, byName, &e)
	return e
}

// awaitPromotion waits for the target to report primary: at the first start,
// after an election, during a switchover.
func awaitPromotion(in decideInput, byName map[string]member, e *election) {
	target := byName[e.target]
	if target.reportsPrimary() && in.lease.heldBy(target.name, in.now) {
		if e.current != "" {
			e.event = &transition{reason: "Promoted", message: fmt.Sprintf("Instance %s is the primary, on timeline %d", target.name, target.report.Timeline)}
		}
		e.current = target.name
		e.failingSince, e.electionStarted, e.switchoverStarted = nil, nil, nil
		watchPrimary(in, byName, e)
		return
	}
	switch {
	case e.current == "" && target.keptData:
		e.phase, e.reason = v1alpha1.PostgresInitializing, v1alpha1.PostgresInitializingReason
		e.message = fmt.Sprintf("Instance %s starts as the first primary, from the data its claim kept", e.target)
	case e.current == "":
		e.phase, e.reason = v1alpha1.PostgresInitializing, v1alpha1.PostgresInitializingReason
		e.message = fmt.Sprintf("Instance %s initializes the database", e.target)
	case e.current == e.target && e.electionStarted == nil:
		e.phase, e.reason = v1alpha1.PostgresSwitchingOver, v1alpha1.PostgresSwitchingOverReason
		e.message = fmt.Sprintf("The switchover was given up: %s starts again as the primary", e.current)
	case e.current == e.target:
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresWaitingForQuorumReason
		e.message = fmt.Sprintf("The primary %s failed and is back before a quorum of standbys: it starts again on its own data", e.current)
	case e.electionStarted != nil || e.failingSince != nil:
		e.phase, e.reason = v1alpha1.PostgresFailingOver, v1alpha1.PostgresFailingOverReason
		e.message = fmt.Sprintf("Promoting %s in place of %s", e.target, e.current)
	default:
		e.phase, e.reason = v1alpha1.PostgresSwitchingOver, v1alpha1.PostgresSwitchingOverReason
		e.message = fmt.Sprintf("Switching the primary over from %s to %s", e.current, e.target)
		if e.switchoverStarted != nil && !in.now.Before(e.switchoverStarted.Add(switchoverTimeout)) && !in.lease.heldBy(e.target, in.now) {
			// The target has not taken the lease, so it has not promoted
			// and will not without it: the former primary, which handed
			// over cleanly and holds all it wrote, starts again.
			e.event = &transition{reason: "SwitchoverAbandoned", message: fmt.Sprintf(
				"Instance %s did not promote within %s (%s): %s starts again as the primary", e.target, switchoverTimeout, describe(target), e.current)}
			e.abandoned = &abandonedSwitchover{target: e.target, retryAfter: in.now.Add(switchoverRetryDelay)}
			e.target = e.current
			e.epoch++
			e.message = fmt.Sprintf("The switchover was given up: %s starts again as the primary", e.current)
			e.after = time.Second
			return
		}
		if e.switchoverStarted == nil {
			// A switchover begun before switchoverStartedAt was kept.
			now := in.now
			e.switchoverStarted = &now
		}
	}
	// A target that is gone, fenced or of another database cannot promote:
	// elect another (a failover), unless the cluster never had a primary.
	if e.current != "" && (!target.exists || target.fenced() || !sameSystem(in.status.SystemID, target)) {
		e.event = &transition{reason: "FailoverStarted", message: fmt.Sprintf("Instance %s cannot be promoted (%s): electing another", e.target, describe(target))}
		startElection(in, e)
		decideElection(in, byName, e)
		return
	}
	e.after = time.Second
}

// watchPrimary checks the current primary: a switchover asked for, a drain,
// or a failure that calls for a failover.
func watchPrimary(in decideInput, byName map[string]member, e *election) {
	primary := byName[e.current]
	healthy := primary.exists && primary.reportsPrimary() && in.lease.heldBy(primary.name, in.now)
	e.phase, e.reason = v1alpha1.PostgresHealthy, v1alpha1.PostgresAvailableReason
	e.message = fmt.Sprintf("Instance %s is the primary", e.current)

	if primary.fencedBySpec {
		// Fenced on purpose: no failover, writes wait for the unfencing.
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresFencedReason
		e.message = fmt.Sprintf("The primary %s is fenced (spec.fencedInstances): writes stop until it is unfenced", e.current)
		e.failingSince = nil
		return
	}
	if healthy {
		e.failingSince = nil
		next, held := switchoverTarget(in, byName, primary, e.abandoned)
		if held {
			e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresSwitchoverAbandonedReason
			e.message = fmt.Sprintf("Instance %s is the primary; a switchover to %s was given up (it did not promote within %s) and is not tried again before %s",
				e.current, e.abandoned.target, switchoverTimeout, e.abandoned.retryAfter.UTC().Format(time.RFC3339))
			e.after = e.abandoned.retryAfter.Sub(in.now)
		}
		if next != "" {
			e.event = &transition{reason: "SwitchoverStarted", message: fmt.Sprintf("Switching the primary over from %s to %s", e.current, next)}
			e.target = next
			e.epoch++
			now := in.now
			e.switchoverStarted = &now
			e.phase, e.reason = v1alpha1.PostgresSwitchingOver, v1alpha1.PostgresSwitchingOverReason
			e.message = fmt.Sprintf("Switching the primary over from %s to %s", e.current, next)
			e.after = time.Second
		}
		return
	}

	// A failover needs a replica to promote: with none running (the whole
	// cluster starts again, after hibernation or an outage), the primary
	// keeps its place and starts again on its own data.
	if !anyReplica(in, primary.name) {
		e.failingSince = nil
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresNoPrimaryReason
		e.message = fmt.Sprintf("Waiting for the primary %s to start (%s): no replica runs that could take its place", e.current, describe(primary))
		e.after = time.Second
		return
	}

	// Failing. A pod gone or a lease released or lapsed fails over at once:
	// the instance no longer holds the right to accept writes. PostgreSQL
	// down under a live manager waits failoverDelay: its manager restarts it
	// in place.
	if e.failingSince == nil {
		now := in.now
		e.failingSince = &now
	}
	lost := !primary.exists || !in.lease.heldBy(primary.name, in.now)
	delay := time.Duration(in.spec.FailoverDelay) * time.Second
	if wait := e.failingSince.Add(delay).Sub(in.now); !lost && wait > 0 {
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresNoPrimaryReason
		e.message = fmt.Sprintf("The primary %s is not ready (%s); failing over in %s unless it recovers", e.current, describe(primary), wait.Round(time.Second))
		e.after = wait
		return
	}
	if short := quorumShortOf(in, e, func(m member) bool { return m.report.Epoch >= e.epoch && holdsData(m) }); short != "" {
		// Without a quorum an election could promote a standby that lacks
		// acknowledged commits: the cluster waits, and says for whom.
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresWaitingForQuorumReason
		e.message = fmt.Sprintf("The primary %s failed (%s); no failover: %s", e.current, describe(primary), short)
		e.after = time.Second
		return
	}
	e.event = &transition{reason: "FailoverStarted", message: fmt.Sprintf("The primary %s failed (%s): electing another", e.current, describe(primary))}
	if in.withoutQuorum && failoverQuorum(in.spec) > 0 {
		e.event.message += ", without a quorum of synchronous standbys, as annotation " + v1alpha1.PostgresFailoverWithoutQuorumAnnotation + " accepts: commits may be lost"
	}
	startElection(in, e)
	decideElection(in, byName, e)
}

// failoverQuorum is how many of the synchronous standbys a failover must
// hear from to be sure that one of them holds every commit the primary
// acknowledged: with synchronous_standby_names ANY n over S standbys, each
// acknowledged commit is on n of them, so any S - n + 1 of them include one
// that has it (Patroni's quorum commit, CloudNativePG's failover quorum).
// 0 without synchronous replication, which promises nothing of the kind.
func failoverQuorum(spec v1alpha1.PostgresClusterSpec) int {
	if spec.Synchronous <= 0 {
		return 0
	}
	return int(spec.Instances) - int(spec.Synchronous)
}

// synchronousStandby tells whether m is one of the standbys the primary's
// synchronous_standby_names lists: every other instance of
// 1..spec.instances, as the instance manager writes it.
func synchronousStandby(in decideInput, primary string, m member) bool {
	n := pgspec.Ordinal(in.clusterID, m.name)
	return m.name != primary && n >= 1 && n <= int(in.spec.Instances)
}

// holdsData tells whether m's report shows standby data that can report
// its WAL position: running as a replica, or stopped standby data, which
// its manager starts during an election.
func holdsData(m member) bool {
	return m.report.Role == v1alpha1.PostgresReplicaRole ||
		(m.report.Role == "" && m.report.StoppedData == v1alpha1.PostgresReplicaRole)
}

// stoppedOnPurpose tells whether m is a standby fenced on purpose (by
// spec, or by a backup's run) whose PostgreSQL stopped cleanly while the
// primary ran on. It counts toward the quorum without running: every
// commit acknowledged after it stopped is on the other standbys, which
// streamed on, and so is all the WAL it had once one such commit was.
// (The one case it misses, docs/postgres-design.md's known limits: no
// commit since the fence, and every other standby behind it throughout.)
func stoppedOnPurpose(m member) bool {
	return m.fenced() && m.report.CleanShutdown && m.report.StoppedData == v1alpha1.PostgresReplicaRole
}

// quorumShortOf says, when fewer synchronous standbys than the failover
// quorum are in (live, unfenced, of this database, and counted by in),
// how many are and whom the failover waits for; "" when the quorum is
// there or none is needed.
func quorumShortOf(in decideInput, e *election, counted func(member) bool) string {
	quorum := failoverQuorum(in.spec)
	if quorum == 0 || in.withoutQuorum {
		return ""
	}
	var have, missing []string
	for _, m := range in.members {
		if !synchronousStandby(in, e.current, m) {
			continue
		}
		if m.exists && m.report != nil && sameSystem(in.status.SystemID, m) && (stoppedOnPurpose(m) || (!m.fenced() && counted(m))) {
			have = append(have, m.name)
		} else {
			missing = append(missing, m.name)
		}
	}
	if len(have) >= quorum {
		return ""
	}
	reporting := "none"
	if len(have) > 0 {
		reporting = strings.Join(have, ", ")
	}
	return fmt.Sprintf("with synchronous %d over %d standbys, a failover needs %d of them to report to be sure of every acknowledged commit, "+
		"and %d can (%s): waiting for %s to report, or for %s to start again "+
		"(annotation %s=%s accepts a failover that may lose commits)",
		in.spec.Synchronous, int(in.spec.Instances)-1, quorum, len(have), reporting, strings.Join(missing, " or "), e.current,
		v1alpha1.PostgresFailoverWithoutQuorumAnnotation, e.current)
}

// chooseFirstPrimary sets the target of a cluster that never had a primary
// and reports whether it did. Without a claim kept from an earlier cluster
// of the name it is the first instance. With kept claims, the first
// primary is the instance whose data is the most advanced, once every
// instance with a kept claim has reported what its data holds under this
// epoch: starting from another would lose what only the most advanced
// holds, and fork the others' history. An instance that never reports
// keeps the cluster waiting, and the status names it; so does a kept claim
// beyond spec.instances, which no instance would read.
func chooseFirstPrimary(in decideInput, e *election) bool {
	if len(in.keptBeyond) > 0 {
		// No instance of this cluster reads them: their data, maybe the
		// most advanced, would be passed over without a word.
		if e.electionStarted == nil {
			now := in.now
			e.electionStarted = &now
		}
		e.phase, e.reason = v1alpha1.PostgresInitializing, v1alpha1.PostgresInitializingReason
		e.message = fmt.Sprintf("The claims %s were kept from an earlier PostgresCluster %s, beyond spec.instances (%d): "+
			"their data may be the most advanced; raise spec.instances to count them, or delete them, for the cluster to start",
			strings.Join(in.keptBeyond, ", "), in.clusterID, in.spec.Instances)
		e.after = 10 * time.Second
		return false
	}
	var kept, withData []member
	var waiting []string
	for _, m := range in.members {
		if !m.keptData || m.fencedBySpec {
			continue
		}
		kept = append(kept, m)
		switch {
		case !m.exists || m.report == nil || m.report.Epoch < e.epoch:
			waiting = append(waiting, m.name)
		case m.report.SystemID != "":
			withData = append(withData, m)
		}
	}
	if len(kept) > 0 && len(waiting) > 0 {
		if e.electionStarted == nil {
			now := in.now
			e.electionStarted = &now
		}
		e.phase, e.reason = v1alpha1.PostgresInitializing, v1alpha1.PostgresInitializingReason
		e.message = fmt.Sprintf("Waiting for %s, whose claims were kept from an earlier PostgresCluster %s, to report their data: "+
			"the first primary is the instance with the most advanced", strings.Join(waiting, ", "), in.clusterID)
		e.after = time.Second
		return false
	}
	e.electionStarted = nil
	if len(withData) == 0 {
		e.target = pgspec.InstanceName(in.clusterID, 1)
		return true
	}
	slices.SortFunc(withData, moreAdvancedData)
	e.target = withData[0].name
	e.event = &transition{reason: "FirstPrimaryChosen", message: fmt.Sprintf(
		"Instance %s starts as the first primary: its kept data is the most advanced (timeline %d, %s)",
		e.target, withData[0].report.Timeline, withData[0].report.CheckpointLSN)}
	return true
}

// moreAdvancedData orders kept data for the first primary: the latest
// timeline first; on one timeline a primary's data, the source of all of
// it, before its standbys'; then the latest checkpoint, then the name.
func moreAdvancedData(a, b member) int {
	if c := cmp.Compare(b.report.Timeline, a.report.Timeline); c != 0 {
		return c
	}
	primary := func(m member) int { return boolRank(m.report.StoppedData == v1alpha1.PostgresPrimaryRole) }
	if c := cmp.Compare(primary(b), primary(a)); c != 0 {
		return c
	}
	if c := cmp.Compare(pgspec.ParseLSN(b.report.CheckpointLSN), pgspec.ParseLSN(a.report.CheckpointLSN)); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// startElection begins a failover: no target, a new epoch for the reports.
func startElection(in decideInput, e *election) {
	e.target, e.switchoverStarted = "", nil
	e.epoch++
	now := in.now
	e.electionStarted = &now
	e.phase, e.reason = v1alpha1.PostgresFailingOver, v1alpha1.PostgresFailingOverReason
}

// decideElection chooses the most advanced replica once every live replica
// reported under the election's epoch, or electionTimeout passed.
func decideElection(in decideInput, byName map[string]member, e *election) {
	e.phase, e.reason = v1alpha1.PostgresFailingOver, v1alpha1.PostgresFailingOverReason
	if e.electionStarted == nil {
		now := in.now
		e.electionStarted = &now
	}
	var fresh []member
	var tooFar []string
	waiting := 0
	for _, m := range in.members {
		if !m.exists || m.fenced() || m.name == e.current || !sameSystem(in.status.SystemID, m) {
			continue
		}
		if m.report == nil || m.report.Role != v1alpha1.PostgresReplicaRole {
			continue
		}
		if m.report.Epoch < e.epoch {
			waiting++
			continue
		}
		if lagsTooFar(in, m) {
			tooFar = append(tooFar, m.name)
			continue
		}
		fresh = append(fresh, m)
	}
	timedOut := !in.now.Before(e.electionStarted.Add(electionTimeout))
	if len(fresh) == 0 && len(tooFar) > 0 && timedOut {
		if returning(in, byName[e.current], e.epoch) {
			e.target = e.current
			e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresReplicasTooFarBehindReason
			e.message = fmt.Sprintf("The primary %s failed and is back, every replica too far behind it: it starts again on its own data", e.current)
			e.after = time.Second
			return
		}
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresReplicasTooFarBehindReason
		e.message = fmt.Sprintf("The primary %s failed; no failover: %s lag more than spec.maxLagOnFailover (%s) behind its last position %s: "+
			"waiting for %s to start again (annotation %s=%s accepts a failover that loses the difference)",
			e.current, strings.Join(tooFar, ", "), in.spec.MaxLagOnFailover.String(), in.status.LastPrimaryLSN, e.current,
			v1alpha1.PostgresFailoverWithoutQuorumAnnotation, e.current)
		e.after = time.Second
		return
	}
	if len(fresh) == 0 && waiting == 0 && timedOut && e.current != "" {
		// Nothing to promote: the former primary keeps its place and
		// starts again on its own data once it can take the lease.
		e.target, e.electionStarted, e.failingSince = e.current, nil, nil
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresNoPrimaryReason
		e.message = fmt.Sprintf("No replica could take the place of %s: waiting for it to start again", e.current)
		e.after = time.Second
		return
	}
	short := quorumShortOf(in, e, func(m member) bool {
		return slices.ContainsFunc(fresh, func(f member) bool { return f.name == m.name })
	})
	if short != "" && returning(in, byName[e.current], e.epoch) {
		// The former primary is back on its data, which holds every commit
		// it acknowledged: it takes its place again (awaitPromotion, the
		// election still open until it runs).
		e.target = e.current
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresWaitingForQuorumReason
		e.message = fmt.Sprintf("The primary %s failed and is back before a quorum of standbys: it starts again on its own data", e.current)
		e.after = time.Second
		return
	}
	if short != "" && timedOut {
		// The election stays open, under its epoch, until the quorum
		// reports or the former primary is back: never a new one that
		// would wait for the same.
		e.phase, e.reason = v1alpha1.PostgresDegraded, v1alpha1.PostgresWaitingForQuorumReason
		e.message = fmt.Sprintf("The primary %s failed; no failover: %s", e.current, short)
		e.after = time.Second
		return
	}
	if len(fresh) == 0 || (waiting > 0 && !timedOut) || short != "" {
		e.message = fmt.Sprintf("The primary %s failed: waiting for the replicas' reports (%d of %d in)", e.current, len(fresh), len(fresh)+waiting)
		e.after = 500 * time.Millisecond
		if waiting > 0 && !timedOut {
			e.after = min(e.after, e.electionStarted.Add(electionTimeout).Sub(in.now))
		}
		return
	}
	slices.SortFunc(fresh, moreAdvanced)
	e.target = fresh[0].name
	e.message = fmt.Sprintf("Promoting %s in place of %s", e.target, e.current)
	e.after = time.Second
}

// lagsTooFar tells whether replica m is further behind the primary's last
// reported position than spec.maxLagOnFailover allows a failover to lose.
func lagsTooFar(in decideInput, m member) bool {
	if in.spec.MaxLagOnFailover == nil || in.withoutQuorum {
		return false
	}
	last := pgspec.ParseLSN(in.status.LastPrimaryLSN)
	bound := uint64(max(in.spec.MaxLagOnFailover.Value(), 0))
	return last > 0 && furthestWAL(m)+bound < last
}

// returning tells whether m, a primary that failed, is back under the
// election's epoch with its data, a primary's: stopped, or running again.
// A primary that fenced itself when it lost its lease (its report says
// fenced) comes back so: it stopped, and it starts only as the target.
// One fenced by spec.fencedInstances stays out.
func returning(in decideInput, m member, epoch int64) bool {
	return m.name != "" && m.exists && !m.fencedBySpec && m.report != nil && m.report.Epoch >= epoch && sameSystem(in.status.SystemID, m) &&
		(m.report.StoppedData == v1alpha1.PostgresPrimaryRole || m.report.Role == v1alpha1.PostgresPrimaryRole)
}

// anyReplica tells whether an instance other than primary runs as a
// replica and could be promoted. Whether it streams does not matter: a
// replica whose primary died stops streaming.
func anyReplica(in decideInput, primary string) bool {
	for _, m := range in.members {
		if m.name != primary && m.exists && m.report != nil && m.report.Role == v1alpha1.PostgresReplicaRole &&
			!m.fenced() && sameSystem(in.status.SystemID, m) {
			return true
		}
	}
	return false
}

// switchoverTarget is the replica a healthy primary must hand over to: the
// one spec.primary names (once it runs the current spec, when the primary
// does); when the primary's node is being drained (or the
// instance is beyond spec.instances), the most advanced ready replica
// elsewhere; when the primary runs an older spec (an update, once its
// replicas are done), the most advanced updated replica; "" for none. The
// target of a switchover given up lately is not chosen: held says that a
// switchover is asked for and that alone keeps it back.
func switchoverTarget(in decideInput, byName map[string]member, primary member, abandoned *abandonedSwitchover) (target string, held bool) {
	streams := streamsFrom(in, primary)
	eligible := func(m member) bool {
		return m.exists && streams(m) && !m.fenced() && !m.nodeDraining && sameSystem(in.status.SystemID, m)
	}
	notAbandoned := func(m member) bool { return abandoned == nil || m.name != abandoned.target }
	if want := in.spec.Primary; want != "" && want != primary.name {
		m, ok := byName[want]
		if ok && primary.specCurrent && !primary.nodeDraining && !m.specCurrent {
			// An update handed the primary over to an updated replica:
			// spec.primary's, of an older spec, is replaced first (as a
			// replica), then switched to; switching to it now would hand
			// the primary back and forth between the two.
			return "", false
		}
		if ok && eligible(m) && notAbandoned(m) {
			return want, false
		}
		return "", ok && eligible(m)
	}
	if !primary.nodeDraining && primary.specCurrent {
		return "", false
	}
	var candidates []member
	heldBack := false
	for _, m := range in.members {
		if m.name != primary.name && eligible(m) && (primary.nodeDraining || m.specCurrent) {
			if !notAbandoned(m) {
				heldBack = true
				continue
			}
			candidates = append(candidates, m)
		}
	}
	if len(candidates) == 0 {
		return "", heldBack
	}
	slices.SortFunc(candidates, moreAdvanced)
	return candidates[0].name, false
}

// routes decides the role labels: role=primary only on the current primary
// while it is healthy and the target, role=replica on the ready replicas
// (see streamsFrom). The status counts as ready the instances it routes.
func routes(in decideInput, byName map[string]member, e *election) {
	p := byName[e.current]
	if e.current != "" && e.current == e.target && p.exists && p.reportsPrimary() && in.lease.heldBy(p.name, in.now) && !p.fencedBySpec {
		e.primary = p.name
	}
	streams := streamsFrom(in, p)
	for _, m := range in.members {
		if m.exists && m.name != e.primary && streams(m) {
			e.replicas = append(e.replicas, m.name)
		}
	}
}

// streamsFrom tells whether a replica is ready: it reports so and, while
// primary runs and reports (it exists, reports itself a ready primary and
// holds the lease), primary lists it among the standbys streaming from
// it. A replica's own report may be its last before it stopped (its pod
// lost its node, its manager hangs): the primary's is the one that sees the
// stream. Without a reporting primary (a failover, a switchover's
// hand-over) the replica's report is all there is.
func streamsFrom(in decideInput, primary member) func(member) bool {
	if primary.name == "" || !primary.exists || !primary.reportsPrimary() || !in.lease.heldBy(primary.name, in.now) {
		return member.reportsReplica
	}
	return func(m member) bool {
		return m.reportsReplica() && slices.Contains(primary.report.Standbys, m.name)
	}
}

// moreAdvanced orders replicas for promotion: by timeline, then by the
// furthest WAL each holds (received or, after a restart, which forgets
// what was received, replayed), highest first, then by name. Whether a
// replica streams does not count: in a failover the one that still
// streams does so from a primary that failed.
func moreAdvanced(a, b member) int {
	if c := cmp.Compare(b.report.Timeline, a.report.Timeline); c != 0 {
		return c
	}
	if c := cmp.Compare(furthestWAL(b), furthestWAL(a)); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// furthestWAL is the furthest WAL position a replica reported holding.
func furthestWAL(m member) uint64 {
	return max(pgspec.ParseLSN(m.report.ReceivedLSN), pgspec.ParseLSN(m.report.ReplayedLSN))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sameSystem tells whether m's data is the cluster's: the same database
// system identifier, or none known yet.
func sameSystem(systemID string, m member) bool {
	return systemID == "" || m.report == nil || m.report.SystemID == "" || m.report.SystemID == systemID
}

// describe says what is wrong with a primary, for messages.
func describe(m member) string {
	switch {
	case !m.exists && m.over != "":
		return "its pod stopped for good (" + m.over + ")"
	case !m.exists:
		return "its pod is gone"
	case m.report == nil:
		return "it has not reported"
	case m.report.Fenced:
		return "it fenced itself: " + m.report.Message
	case m.report.Role != v1alpha1.PostgresPrimaryRole:
		return "PostgreSQL is not running as primary: " + m.report.Message
	case !m.report.Ready:
		return "PostgreSQL is not ready: " + m.report.Message
	}
	return "its lease lapsed"
}
