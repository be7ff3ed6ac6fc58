package postgrescluster

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/pgspec"
)

// computeStatus derives the status of pg from what was observed and
// decided. It reads the previous status only for the transition times of
// conditions that kept their status.
func computeStatus(pg *v1alpha1.PostgresCluster, obs *observation, e election, creds credentials, problem *cause, now time.Time) v1alpha1.PostgresClusterStatus {
	status := v1alpha1.PostgresClusterStatus{
		ObservedGeneration: pg.Generation,
		Phase:              e.phase,
		CurrentPrimary:     e.current,
		TargetPrimary:      e.target,
		PromotionEpoch:     e.epoch,
		SystemID:           pg.Status.SystemID,
		LastPrimaryLSN:     lastPrimaryLSN(pg, obs, e),
		WriteService:       pgspec.WriteService(pg.Name),
		ReadService:        pgspec.ReadService(pg.Name),
		Credentials: v1alpha1.PostgresCredentialsStatus{
			AppSecret:       creds.appSecret,
			SuperuserSecret: pgspec.SuperuserSecret(pg.Name),
			AppliedVersion:  pg.Status.Credentials.AppliedVersion,
		},
	}
	if e.failingSince != nil {
		t := metav1.NewTime(*e.failingSince)
		status.FailingSince = &t
	}
	if e.electionStarted != nil {
		t := metav1.NewTime(*e.electionStarted)
		status.ElectionStartedAt = &t
	}
	if e.switchoverStarted != nil {
		t := metav1.NewTime(*e.switchoverStarted)
		status.SwitchoverStartedAt = &t
	}
	if a := e.abandoned; a != nil {
		status.AbandonedSwitchover = &v1alpha1.PostgresAbandonedSwitchover{Target: a.target, RetryAfter: metav1.NewTime(a.retryAfter)}
	}

	var primaryLSN uint64
	for _, m := range obs.members {
		if m.name == e.primary && m.report != nil {
			primaryLSN = pgspec.ParseLSN(m.report.CurrentLSN)
			if status.SystemID == "" {
				status.SystemID = m.report.SystemID
			}
			if m.report.PasswordVersion != "" {
				status.Credentials.AppliedVersion = m.report.PasswordVersion
			}
		}
	}
	ready := 0
	for _, m := range obs.members {
		s := instanceStatus(m, primaryLSN)
		if m.name == e.primary || containsName(e.replicas, m.name) {
			ready++
			s.Ready = true
		} else {
			s.Ready = false
		}
		status.Instances = append(status.Instances, s)
	}
	desired := int(pg.Spec.Instances)
	if pg.Spec.Hibernate {
		desired = 0
	}
	status.ReadyInstances = fmt.Sprintf("%d/%d", ready, desired)

	status.Archiving = archivingStatus(pg, obs, e)
	conditions := conditionsFor(pg, obs, e, problem, ready, desired)
	if c, ok := archivingCondition(pg, status.Archiving, e.primary); ok {
		conditions = append(conditions, c)
	}
	reconciling, stalled := kit.KStatusConditions(*meta.FindStatusCondition(conditions, v1alpha1.PostgresReadyCondition),
		*meta.FindStatusCondition(conditions, v1alpha1.PostgresDegradedCondition), kstatusReasons)
	conditions = append(conditions, reconciling, stalled)
	status.Conditions = kit.MergeConditions(pg.Status.Conditions, pg.Generation, metav1.NewTime(now), conditions...)
	return status
}

// kstatusReasons: the Degraded causes that wait for a person are a spec or
// an object to fix, and a failover that cannot be sure of the data without
// the failed primary's return or a person's consent. A write that failed,
// a failover delay and a switchover given up (tried again later) pass by
// themselves.
var kstatusReasons = kit.KStatusReasons{Stalled: []string{
	v1alpha1.PostgresInvalidSpecReason, v1alpha1.PostgresSecretMissingReason, v1alpha1.PostgresConflictReason,
	v1alpha1.PostgresCertificateInvalidReason,
	v1alpha1.PostgresStorageShrinkReason, v1alpha1.PostgresBackupNotFoundReason, v1alpha1.PostgresKeptClaimsReason,
	v1alpha1.PostgresWaitingForQuorumReason, v1alpha1.PostgresReplicasTooFarBehindReason,
}}

// instanceStatus is what the status says of one instance.
func instanceStatus(m member, primaryLSN uint64) v1alpha1.PostgresInstanceStatus {
	s := v1alpha1.PostgresInstanceStatus{Name: m.name, Fenced: m.fencedBySpec}
	switch {
	case !m.exists:
		s.Message = "No pod runs it"
		return s
	case m.report == nil:
		s.Message = "Starting: the instance manager has not reported yet"
		return s
	}
	r := m.report
	s.Role, s.Timeline, s.Fenced, s.Message = r.Role, r.Timeline, s.Fenced || r.Fenced, kit.TruncateMessage(r.Message)
	if m.fencedBySpec {
		// What a BackupJob's run waits for before it snapshots the claim.
		s.BackupFence, s.CleanShutdown, s.CheckpointLSN = r.BackupFence, r.CleanShutdown, r.CheckpointLSN
	}
	switch r.Role {
	case v1alpha1.PostgresPrimaryRole:
		s.ReceivedLSN, s.ReplayedLSN = r.CurrentLSN, r.CurrentLSN
	default:
		s.ReceivedLSN, s.ReplayedLSN = r.ReceivedLSN, r.ReplayedLSN
		if replayed := pgspec.ParseLSN(r.ReplayedLSN); primaryLSN > replayed && replayed > 0 {
			s.LagBytes = int64(primaryLSN - replayed)
		}
	}
	return s
}

// conditionsFor decides the four conditions.
func conditionsFor(pg *v1alpha1.PostgresCluster, obs *observation, e election, problem *cause, ready, desired int) []metav1.Condition {
	set := func(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: kit.TruncateMessage(message)}
	}
	primary := set(v1alpha1.PostgresPrimaryAvailableCondition, metav1.ConditionFalse, e.reason, e.message)
	switch {
	case e.primary != "" && !obs.routed[e.primary]:
		primary = set(v1alpha1.PostgresPrimaryAvailableCondition, metav1.ConditionFalse, v1alpha1.PostgresApplyFailedReason,
			fmt.Sprintf("Instance %s is the primary, but Service %s does not route to it: its pod lacks the label %s=%s",
				e.primary, pgspec.WriteService(pg.Name), v1alpha1.PostgresRoleLabel, v1alpha1.PostgresPrimaryRole))
	case e.primary != "":
		primary = set(v1alpha1.PostgresPrimaryAvailableCondition, metav1.ConditionTrue, v1alpha1.PostgresAvailableReason,
			fmt.Sprintf("Instance %s accepts writes through Service %s", e.primary, pgspec.WriteService(pg.Name)))
	}

	wantReplicas := desired - 1
	var notStreaming []string
	for _, m := range obs.members {
		if pgspec.Ordinal(pg.Name, m.name) <= desired && m.name != e.primary && !containsName(e.replicas, m.name) {
			notStreaming = append(notStreaming, m.name)
		}
	}
	replicas := set(v1alpha1.PostgresReplicasReadyCondition, metav1.ConditionTrue, v1alpha1.PostgresAvailableReason,
		fmt.Sprintf("%d of %d replicas stream from the primary", len(e.replicas), max(wantReplicas, 0)))
	switch {
	case pg.Spec.Hibernate:
		replicas = set(v1alpha1.PostgresReplicasReadyCondition, metav1.ConditionFalse, v1alpha1.PostgresHibernatedReason, e.message)
	case wantReplicas <= 0:
		replicas = set(v1alpha1.PostgresReplicasReadyCondition, metav1.ConditionTrue, v1alpha1.PostgresNoReplicasReason, "spec.instances is 1: there is no replica")
	case len(e.replicas) < wantReplicas && backupFenced(pg, notStreaming, e.primary):
		replicas = set(v1alpha1.PostgresReplicasReadyCondition, metav1.ConditionFalse, v1alpha1.PostgresBackupFencedReason,
			fmt.Sprintf("%d of %d replicas stream from the primary; %s is fenced for a cold snapshot by the BackupJob run %s, and catches up once unfenced",
				len(e.replicas), wantReplicas, pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation], pg.Annotations[v1alpha1.PostgresBackupFenceByAnnotation]))
	case len(e.replicas) < wantReplicas:
		replicas = set(v1alpha1.PostgresReplicasReadyCondition, metav1.ConditionFalse, v1alpha1.PostgresReplicasLaggingReason,
			fmt.Sprintf("%d of %d replicas stream from the primary; not streaming: %s", len(e.replicas), wantReplicas, strings.Join(without(notStreaming, e.primary), ", ")))
	}

	degraded := set(v1alpha1.PostgresDegradedCondition, metav1.ConditionFalse, v1alpha1.PostgresAsExpectedReason, "Nothing is wrong")
	if problem != nil {
		degraded = set(v1alpha1.PostgresDegradedCondition, metav1.ConditionTrue, problem.Reason, kit.TruncateMessage(problem.Message))
	} else if e.phase == v1alpha1.PostgresDegraded && e.reason != v1alpha1.PostgresFencedReason {
		degraded = set(v1alpha1.PostgresDegradedCondition, metav1.ConditionTrue, e.reason, e.message)
	}

	readyCond := set(v1alpha1.PostgresReadyCondition, metav1.ConditionFalse, e.reason, e.message)
	switch {
	case problem != nil:
		readyCond = set(v1alpha1.PostgresReadyCondition, metav1.ConditionFalse, problem.Reason, kit.TruncateMessage(problem.Message))
	case pg.Spec.Hibernate:
		readyCond = set(v1alpha1.PostgresReadyCondition, metav1.ConditionTrue, v1alpha1.PostgresHibernatedReason, e.message)
	case primary.Status != metav1.ConditionTrue:
	case replicas.Status != metav1.ConditionTrue:
		readyCond = set(v1alpha1.PostgresReadyCondition, metav1.ConditionFalse, replicas.Reason, replicas.Message)
	case anyResizing(obs):
		readyCond = set(v1alpha1.PostgresReadyCondition, metav1.ConditionTrue, v1alpha1.PostgresStorageResizingReason,
			fmt.Sprintf("%d of %d instances ready; the claims grow to %s", ready, desired, pg.Spec.Storage.Size.String()))
	default:
		readyCond = set(v1alpha1.PostgresReadyCondition, metav1.ConditionTrue, v1alpha1.PostgresAvailableReason,
			fmt.Sprintf("%d of %d instances ready; primary %s", ready, desired, e.primary))
	}
	return []metav1.Condition{readyCond, primary, replicas, degraded}
}

// backupFenced tells whether the instances not streaming, but for the
// primary, are just the one a BackupJob's run fenced.
func backupFenced(pg *v1alpha1.PostgresCluster, notStreaming []string, primary string) bool {
	rest := without(notStreaming, primary)
	return len(rest) == 1 && pgspec.FencedForBackup(pg, rest[0])
}

func anyResizing(obs *observation) bool {
	for _, claim := range obs.claims {
		if resizing(claim) {
			return true
		}
	}
	return false
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func without(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// statusSummary is what makes a status urgent: the generation it
// describes, the phase, the primary, and the status of each condition. A
// change of positions and lag alone waits for statusProgressInterval.
func statusSummary(status *v1alpha1.PostgresClusterStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%s/%s/%s/%d/%s/%s", status.ObservedGeneration, status.Phase, status.CurrentPrimary, status.TargetPrimary,
		status.PromotionEpoch, status.ReadyInstances, status.Credentials.AppliedVersion)
	for _, t := range []string{v1alpha1.PostgresReadyCondition, v1alpha1.PostgresPrimaryAvailableCondition, v1alpha1.PostgresReplicasReadyCondition, v1alpha1.PostgresDegradedCondition} {
		if c := meta.FindStatusCondition(status.Conditions, t); c != nil {
			fmt.Fprintf(&b, "/%s=%s:%s", t, c.Status, c.Reason)
		}
	}
	for _, i := range status.Instances {
		fmt.Fprintf(&b, "/%s:%s:%t:%t:%d:%s:%t", i.Name, i.Role, i.Ready, i.Fenced, i.Timeline, i.BackupFence, i.CleanShutdown)
	}
	return b.String()
}

// lastPrimaryLSN is the position the current primary reports while it runs
// as one, else the last one it reported.
func lastPrimaryLSN(pg *v1alpha1.PostgresCluster, obs *observation, e election) string {
	for _, m := range obs.members {
		if m.name == e.current && m.report != nil && m.report.Role == v1alpha1.PostgresPrimaryRole && m.report.CurrentLSN != "" {
			return m.report.CurrentLSN
		}
	}
	return pg.Status.LastPrimaryLSN
}
