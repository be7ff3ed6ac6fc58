package postgrescluster

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// primaryReport is a ready primary's report, with the standbys streaming
// from it.
func primaryReport(lsn string, standbys ...string) *v1alpha1.PostgresInstanceReport {
	return &v1alpha1.PostgresInstanceReport{Role: "primary", Ready: true, Timeline: 1, CurrentLSN: lsn, SystemID: "42", Standbys: standbys}
}

func replicaReport(epoch int64, timeline int64, received string) *v1alpha1.PostgresInstanceReport {
	return &v1alpha1.PostgresInstanceReport{Role: "replica", Ready: true, Timeline: timeline, ReceivedLSN: received, ReplayedLSN: received, SystemID: "42", Epoch: epoch}
}

// stopped is the report of an instance whose kept data is not running.
func stopped(epoch, timeline int64, data, checkpoint string) *v1alpha1.PostgresInstanceReport {
	return &v1alpha1.PostgresInstanceReport{StoppedData: data, Timeline: timeline, CheckpointLSN: checkpoint, SystemID: "42", Epoch: epoch}
}

// kept is an instance whose claim is older than the cluster.
func kept(name string, r *v1alpha1.PostgresInstanceReport) member {
	m := up(name, r)
	m.keptData = true
	return m
}

func up(name string, r *v1alpha1.PostgresInstanceReport) member {
	return member{name: name, exists: true, report: r, specCurrent: true}
}

// podWith is the pod of instance name of the cluster db in phase, with
// reason, and r in its report annotation when not nil.
func podWith(name string, phase corev1.PodPhase, reason string, r *v1alpha1.PostgresInstanceReport) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{SpecHashAnnotation: "h"}},
		Status: corev1.PodStatus{Phase: phase, Reason: reason}}
	if r != nil {
		data, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		pod.Annotations[v1alpha1.PostgresReportAnnotation] = string(data)
	}
	return pod
}

// evicted is the member observe makes of an instance whose pod the kubelet
// evicted after r, its last report.
func evicted(name string, r *v1alpha1.PostgresInstanceReport) member {
	return memberOf(&v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, name, podWith(name, corev1.PodFailed, "Evicted", r), "h")
}

func held(name string) lease { return lease{holder: name, renewed: t0, duration: 10 * time.Second} }

func healthyStatus() v1alpha1.PostgresClusterStatus {
	return v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 1, SystemID: "42"}
}

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

func TestDecide(t *testing.T) {
	spec := v1alpha1.PostgresClusterSpec{Instances: 3}
	tests := []struct {
		name   string
		spec   *v1alpha1.PostgresClusterSpec
		status v1alpha1.PostgresClusterStatus
		member []member
		lease  lease
		now    time.Duration // after t0
		// keptBeyond are kept claims beyond spec.instances.
		keptBeyond []string
		// withoutQuorum: a failover without a quorum was accepted.
		withoutQuorum bool

		wantPhase v1alpha1.PostgresClusterPhase
		// wantReason, when set, is the election's reason; wantMessage a
		// part of its message.
		wantReason, wantMessage string
		wantCurrent, wantTgt    string
		wantEpoch               int64
		wantPrimary             string
		wantReplicas            []string
		wantEvent               string
		wantElection            bool
		// wantAbandoned is the target of a switchover given up that is
		// remembered, not to be chosen again yet.
		wantAbandoned string
	}{
		{
			name:      "a new cluster: the first instance initializes",
			member:    []member{up("db-1", nil), up("db-2", nil), up("db-3", nil)},
			wantPhase: v1alpha1.PostgresInitializing, wantTgt: "db-1", wantEpoch: 1,
		},
		{
			name: "made again over kept claims: it waits for every kept instance's report under its epoch",
			member: []member{kept("db-1", stopped(1, 2, "replica", "0/5000000")), kept("db-2", nil),
				kept("db-3", stopped(0, 2, "replica", "0/5000000"))},
			wantPhase: v1alpha1.PostgresInitializing, wantEpoch: 1, wantElection: true,
		},
		{
			name:   "... and, with every report in, starts from the most advanced data: the primary's of the latest timeline",
			status: v1alpha1.PostgresClusterStatus{PromotionEpoch: 1, ElectionStartedAt: at(0)},
			member: []member{kept("db-1", stopped(1, 2, "replica", "0/5000000")), kept("db-2", stopped(1, 2, "primary", "0/4000000")),
				kept("db-3", stopped(1, 1, "primary", "0/9000000"))},
			now:       time.Minute,
			wantPhase: v1alpha1.PostgresInitializing, wantTgt: "db-2", wantEpoch: 1, wantEvent: "FirstPrimaryChosen",
		},
		{
			name:   "... or the standby with the latest checkpoint when no primary's data is left",
			status: v1alpha1.PostgresClusterStatus{PromotionEpoch: 1, ElectionStartedAt: at(0)},
			member: []member{kept("db-1", stopped(1, 2, "replica", "0/5000000")), kept("db-2", stopped(1, 2, "replica", "0/6000000")),
				up("db-3", &v1alpha1.PostgresInstanceReport{Epoch: 1})},
			wantPhase: v1alpha1.PostgresInitializing, wantTgt: "db-2", wantEpoch: 1, wantEvent: "FirstPrimaryChosen",
		},
		{
			name:       "... and waits while a kept claim lies beyond spec.instances: no instance would read its data",
			spec:       &v1alpha1.PostgresClusterSpec{Instances: 2},
			status:     v1alpha1.PostgresClusterStatus{PromotionEpoch: 1, ElectionStartedAt: at(0)},
			member:     []member{kept("db-1", stopped(1, 2, "replica", "0/5000000")), kept("db-2", stopped(1, 2, "primary", "0/6000000"))},
			keptBeyond: []string{"db-3"},
			wantPhase:  v1alpha1.PostgresInitializing, wantEpoch: 1, wantElection: true,
		},
		{
			name:      "... and the first instance when the kept claims hold no database",
			status:    v1alpha1.PostgresClusterStatus{PromotionEpoch: 1, ElectionStartedAt: at(0)},
			member:    []member{kept("db-1", &v1alpha1.PostgresInstanceReport{Epoch: 1}), up("db-2", nil)},
			wantPhase: v1alpha1.PostgresInitializing, wantTgt: "db-1", wantEpoch: 1,
		},
		{
			name:      "the first primary reports: it is current, no event",
			status:    v1alpha1.PostgresClusterStatus{TargetPrimary: "db-1", PromotionEpoch: 1},
			member:    []member{up("db-1", primaryReport("0/3000000")), up("db-2", nil), up("db-3", nil)},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1",
		},
		{
			name:      "a primary reporting without the lease gets no traffic",
			status:    v1alpha1.PostgresClusterStatus{TargetPrimary: "db-1", PromotionEpoch: 1},
			member:    []member{up("db-1", primaryReport("0/3000000"))},
			wantPhase: v1alpha1.PostgresInitializing, wantTgt: "db-1", wantEpoch: 1,
		},
		{
			name:      "healthy: the primary and the streaming replicas are routed",
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(1, 1, "0/3000000")), up("db-3", &v1alpha1.PostgresInstanceReport{Role: "replica", SystemID: "42"})},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1", wantReplicas: []string{"db-2"},
		},
		{
			name:   "a replica whose report says ready but that the primary does not list is neither routed nor counted",
			status: healthyStatus(),
			member: []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(1, 1, "0/3000000")),
				up("db-3", replicaReport(1, 1, "0/2000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1", wantReplicas: []string{"db-2"},
		},
		{
			name:      "an evicted replica's pod is over: its last report, ready, counts for nothing, even before the primary notices",
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000", "db-2", "db-3")), up("db-2", replicaReport(1, 1, "0/3000000")), evicted("db-3", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1", wantReplicas: []string{"db-2"},
		},
		{
			name:      "the primary's pod is gone: an election, nobody routed for writes",
			status:    healthyStatus(),
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(1, 1, "0/3000000")), up("db-3", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantEvent: "FailoverStarted", wantElection: true,
			wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:   "the election chooses the most advanced replica that reported under its epoch",
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")), up("db-3", replicaReport(2, 1, "0/3000200")),
				up("db-4", replicaReport(2, 1, "0/3000300"))},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-4", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2", "db-3", "db-4"},
		},
		{
			name:   "a fenced replica and one of another database are never chosen",
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")),
				{name: "db-3", exists: true, fencedBySpec: true, report: replicaReport(2, 1, "0/3000900")},
				up("db-4", &v1alpha1.PostgresInstanceReport{Role: "replica", Ready: true, Timeline: 1, ReceivedLSN: "1/0", SystemID: "7", Epoch: 2})},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2", "db-3", "db-4"},
		},
		{
			name:      "the election waits for a replica that has not reported under its epoch",
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")), up("db-3", replicaReport(1, 1, "0/3000100"))},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:      "... but no longer than the election's timeout",
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")), up("db-3", replicaReport(1, 1, "0/3000900"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:      "synchronous 1 over two standbys, the primary and one standby lost together: no failover on the lagging standby's word alone",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    healthyStatus(),
			member:    []member{{name: "db-1"}, {name: "db-2"}, up("db-3", replicaReport(1, 1, "0/3000100"))},
			lease:     held("db-1"),
			now:       11 * time.Second,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason, wantMessage: "db-2",
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantReplicas: []string{"db-3"},
		},
		{
			name:      "... nor when a standby's pod exists but it has not reported under the current epoch",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    healthyStatus(),
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(0, 1, "0/3000900")), up("db-3", replicaReport(1, 1, "0/3000100"))},
			lease:     held("db-1"),
			now:       11 * time.Second,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason,
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:      "... and an election that times out short of the quorum promotes nobody: it stays open, under its epoch",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(1, 1, "0/3000900")), up("db-3", replicaReport(2, 1, "0/3000100"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason, wantMessage: "db-2",
			wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:      "the former primary back on its data before a quorum takes its place again",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{up("db-1", stopped(2, 1, "primary", "0/3000000")), {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100"))},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason,
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-3"},
		},
		{
			name:      "... waits for it to run, the election open, whatever the time",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{up("db-1", &v1alpha1.PostgresInstanceReport{SystemID: "42", Epoch: 2, Message: "starting as primary"}), {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100"))},
			lease:     held("db-1"),
			now:       time.Minute,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason,
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-3"},
		},
		{
			name:      "... and is the primary once it runs with the lease",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{up("db-1", primaryReport("0/3000200", "db-3")), {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100"))},
			lease:     lease{holder: "db-1", renewed: t0.Add(time.Minute), duration: 10 * time.Second},
			now:       time.Minute,
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2, wantPrimary: "db-1", wantReplicas: []string{"db-3"},
			wantEvent: "Promoted",
		},
		{
			name:   "a standby fenced for a backup, stopped cleanly, counts toward the quorum; it is never promoted",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")),
				{name: "db-3", exists: true, fencedBySpec: true, report: &v1alpha1.PostgresInstanceReport{Fenced: true, StoppedData: "replica", CleanShutdown: true,
					Timeline: 1, CheckpointLSN: "0/3000000", SystemID: "42", Epoch: 2}}},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2"},
		},
		{
			name:   "... not while it is still stopping",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000100")),
				{name: "db-3", exists: true, fencedBySpec: true, report: replicaReport(2, 1, "0/3000200")}},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason, wantCurrent: "db-1", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:   "... unless a person accepted a failover without a quorum for this primary's failure",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status: healthyStatus(),
			member: []member{{name: "db-1"}, {name: "db-2"}, up("db-3", replicaReport(1, 1, "0/3000100"))},
			lease:  held("db-1"),
			now:    11 * time.Second, withoutQuorum: true,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantEvent: "FailoverStarted", wantElection: true,
			wantReplicas: []string{"db-3"},
		},
		{
			name:   "... and its election promotes the most advanced of those that report",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100"))},
			now:    electionTimeout, withoutQuorum: true,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-3", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-3"},
		},
		{
			name:      "... while with the quorum in, the most advanced of them is promoted",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000900")), up("db-3", replicaReport(2, 1, "0/3000100"))},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:   "synchronous 2 over four standbys: three reports are a quorum",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 5, Synchronous: 2},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100")),
				up("db-4", replicaReport(2, 1, "0/3000300")), up("db-5", replicaReport(2, 1, "0/3000200"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-4", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-3", "db-4", "db-5"},
		},
		{
			name:   "... and two are not",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 5, Synchronous: 2},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, {name: "db-2"}, {name: "db-3"},
				up("db-4", replicaReport(2, 1, "0/3000300")), up("db-5", replicaReport(2, 1, "0/3000200"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason,
			wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-4", "db-5"},
		},
		{
			name:      "a standby beyond spec.instances is no synchronous standby: it does not count toward the quorum",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{{name: "db-1"}, {name: "db-2"}, up("db-3", replicaReport(2, 1, "0/3000100")), up("db-4", replicaReport(2, 1, "0/3000100"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresWaitingForQuorumReason,
			wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-3", "db-4"},
		},
		{
			name:      "with maxLagOnFailover, a replica further behind the primary's last position is not promoted: the election waits",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, MaxLagOnFailover: ptr.To(resource.MustParse("1Mi"))},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42", LastPrimaryLSN: "0/5000000"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000000"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresReplicasTooFarBehindReason, wantMessage: "db-2",
			wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2"},
		},
		{
			name:   "... and the former primary, which fenced itself when it lost its lease, takes its place again once it reports",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, MaxLagOnFailover: ptr.To(resource.MustParse("1Mi"))},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42", LastPrimaryLSN: "0/5000000"},
			member: []member{up("db-1", func() *v1alpha1.PostgresInstanceReport {
				r := stopped(2, 1, "primary", "0/5000100")
				r.Fenced = true
				return r
			}()), up("db-2", replicaReport(2, 1, "0/3000000"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresReplicasTooFarBehindReason, wantMessage: "starts again on its own data",
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2"},
		},
		{
			name:   "... but not one fenced by spec.fencedInstances",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, MaxLagOnFailover: ptr.To(resource.MustParse("1Mi")), FencedInstances: []string{"db-1"}},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42", LastPrimaryLSN: "0/5000000"},
			member: []member{{name: "db-1", exists: true, fencedBySpec: true, report: stopped(2, 1, "primary", "0/5000100")},
				up("db-2", replicaReport(2, 1, "0/3000000"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresReplicasTooFarBehindReason, wantMessage: "waiting for db-1",
			wantCurrent: "db-1", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2"},
		},
		{
			name:      "... one within it is",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, MaxLagOnFailover: ptr.To(resource.MustParse("1Mi"))},
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42", LastPrimaryLSN: "0/5000000"},
			member:    []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/4F00000"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2"},
		},
		{
			name:   "... and so is one too far behind once a person accepts the loss",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, MaxLagOnFailover: ptr.To(resource.MustParse("1Mi"))},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42", LastPrimaryLSN: "0/5000000"},
			member: []member{{name: "db-1"}, up("db-2", replicaReport(2, 1, "0/3000000"))},
			now:    electionTimeout, withoutQuorum: true,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true, wantReplicas: []string{"db-2"},
		},
		{
			name:   "a standby started again during the election is ranked by the furthest WAL it holds, not by whether it streams",
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"},
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", Timeline: 1, ReplayedLSN: "0/3000900", SystemID: "42", Epoch: 2}),
				up("db-3", replicaReport(2, 1, "0/3000100"))},
			now:       time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantElection: true,
			wantReplicas: []string{"db-3"},
		},
		{
			name:   "the elected replica promoted: it is the primary",
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-2", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member: []member{{name: "db-1"}, up("db-2", &v1alpha1.PostgresInstanceReport{Role: "primary", Ready: true, Timeline: 2, SystemID: "42", Epoch: 2, Standbys: []string{"db-3"}}),
				up("db-3", replicaReport(2, 2, "0/3000100"))},
			lease:     held("db-2"),
			now:       2 * time.Second,
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-2", wantTgt: "db-2", wantEpoch: 2, wantPrimary: "db-2", wantReplicas: []string{"db-3"},
			wantEvent: "Promoted",
		},
		{
			name:      "PostgreSQL down under a live manager waits failoverDelay",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, FailoverDelay: 30},
			status:    healthyStatus(),
			member:    []member{up("db-1", &v1alpha1.PostgresInstanceReport{Role: "primary", SystemID: "42", Message: "restarting"}), up("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantReplicas: []string{"db-2"},
		},
		{
			name:      "... and fails over once it passed",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, FailoverDelay: 30},
			status:    func() v1alpha1.PostgresClusterStatus { s := healthyStatus(); s.FailingSince = at(0); return s }(),
			member:    []member{up("db-1", &v1alpha1.PostgresInstanceReport{Role: "primary", SystemID: "42"}), up("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     lease{holder: "db-1", renewed: t0.Add(30 * time.Second), duration: 10 * time.Second},
			now:       30 * time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantEvent: "FailoverStarted", wantElection: true,
			wantReplicas: []string{"db-2"},
		},
		{
			name:      "a lapsed lease fails over at once, whatever failoverDelay",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, FailoverDelay: 30},
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000")), up("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			now:       11 * time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantEvent: "FailoverStarted", wantElection: true,
			wantReplicas: []string{"db-2"},
		},
		{
			name:      "a fenced primary is not failed over",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, FencedInstances: []string{"db-1"}},
			status:    healthyStatus(),
			member:    []member{{name: "db-1", exists: true, fencedBySpec: true, report: &v1alpha1.PostgresInstanceReport{Role: "primary", Fenced: true}}, up("db-2", replicaReport(1, 1, "0/3000000"))},
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantReplicas: []string{"db-2"},
		},
		{
			name:      "spec.primary switches over to a ready replica",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantEvent: "SwitchoverStarted",
			wantReplicas: []string{"db-2"},
		},
		{
			// An update handed the primary over to the updated db-1: spec.primary's db-2, which runs an older
			// spec, is switched to once its pod is replaced, not before (which would hand back and forth).
			name:   "... not to one of an older spec while the primary runs the current one",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: healthyStatus(),
			member: []member{up("db-1", primaryReport("0/3000000", "db-2")),
				{name: "db-2", exists: true, report: replicaReport(1, 1, "0/3000000")}},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1",
			wantReplicas: []string{"db-2"},
		},
		{
			name:   "... but to one of an older spec when the primary's is older too",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: healthyStatus(),
			member: []member{{name: "db-1", exists: true, report: primaryReport("0/3000000", "db-2")},
				{name: "db-2", exists: true, report: replicaReport(1, 1, "0/3000000")}},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2, wantEvent: "SwitchoverStarted",
			wantReplicas: []string{"db-2"},
		},
		{
			name:      "... not to one that says it streams but that the primary does not list",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000")), up("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1",
		},
		{
			name:      "... not to one that does not stream",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status:    healthyStatus(),
			member:    []member{up("db-1", primaryReport("0/3000000")), up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", SystemID: "42"})},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresHealthy, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1, wantPrimary: "db-1",
		},
		{
			name:   "a drain of the primary's node switches over to a replica elsewhere",
			status: healthyStatus(),
			member: []member{{name: "db-1", exists: true, nodeDraining: true, report: primaryReport("0/3000000", "db-2", "db-3")},
				{name: "db-2", exists: true, nodeDraining: true, report: replicaReport(1, 1, "0/3000000")}, up("db-3", replicaReport(1, 1, "0/2000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-3", wantEpoch: 2, wantEvent: "SwitchoverStarted",
			wantReplicas: []string{"db-2", "db-3"},
		},
		{
			name:   "a switchover whose target has not promoted within switchoverTimeout is given up: the former primary starts again",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-2", PromotionEpoch: 2, SwitchoverStartedAt: at(0), SystemID: "42"},
			member: []member{up("db-1", stopped(2, 1, "primary", "0/3000000")),
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", Timeline: 1, ReceivedLSN: "0/2000000", SystemID: "42", Epoch: 2})},
			now:       switchoverTimeout,
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 3, wantEvent: "SwitchoverAbandoned",
			wantAbandoned: "db-2",
		},
		{
			name:   "... not while the target holds the lease: it may be promoting",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-2", PromotionEpoch: 2, SwitchoverStartedAt: at(0), SystemID: "42"},
			member: []member{up("db-1", stopped(2, 1, "primary", "0/3000000")),
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", Timeline: 1, ReceivedLSN: "0/3000000", SystemID: "42", Epoch: 2})},
			lease:     lease{holder: "db-2", renewed: t0.Add(switchoverTimeout), duration: 10 * time.Second},
			now:       switchoverTimeout,
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2,
		},
		{
			name:   "... nor before its time",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-2", PromotionEpoch: 2, SwitchoverStartedAt: at(0), SystemID: "42"},
			member: []member{up("db-1", stopped(2, 1, "primary", "0/3000000")),
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", Timeline: 1, ReceivedLSN: "0/2000000", SystemID: "42", Epoch: 2})},
			now:       switchoverTimeout - time.Second,
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 2,
		},
		{
			name:   "... and the former primary, given its place back, is awaited like a promotion, with no failover while it starts",
			spec:   &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 3, SwitchoverStartedAt: at(0), SystemID: "42"},
			member: []member{up("db-1", &v1alpha1.PostgresInstanceReport{SystemID: "42", Epoch: 3, Message: "starting as primary"}),
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", Timeline: 1, ReceivedLSN: "0/2000000", SystemID: "42", Epoch: 3})},
			lease:     held("db-1"),
			now:       2 * switchoverTimeout,
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 3,
		},
		{
			name: "while spec.primary still names a target given up, the switchover is not tried again before its retry time",
			spec: &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 3, SystemID: "42",
				AbandonedSwitchover: &v1alpha1.PostgresAbandonedSwitchover{Target: "db-2", RetryAfter: *at(switchoverRetryDelay)}},
			member:    []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(3, 1, "0/3000000"))},
			lease:     lease{holder: "db-1", renewed: t0.Add(time.Minute), duration: 10 * time.Second},
			now:       time.Minute,
			wantPhase: v1alpha1.PostgresDegraded, wantReason: v1alpha1.PostgresSwitchoverAbandonedReason, wantMessage: "a switchover to db-2 was given up",
			wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 3, wantPrimary: "db-1", wantReplicas: []string{"db-2"}, wantAbandoned: "db-2",
		},
		{
			name: "... and is tried again from then",
			spec: &v1alpha1.PostgresClusterSpec{Instances: 2, Primary: "db-2"},
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 3, SystemID: "42",
				AbandonedSwitchover: &v1alpha1.PostgresAbandonedSwitchover{Target: "db-2", RetryAfter: *at(switchoverRetryDelay)}},
			member:    []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(3, 1, "0/3000000"))},
			lease:     lease{holder: "db-1", renewed: t0.Add(switchoverRetryDelay), duration: 10 * time.Second},
			now:       switchoverRetryDelay,
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-2", wantEpoch: 4, wantEvent: "SwitchoverStarted",
			wantReplicas: []string{"db-2"},
		},
		{
			name: "a drain switches over to another replica than the target given up",
			status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", PromotionEpoch: 3, SystemID: "42",
				AbandonedSwitchover: &v1alpha1.PostgresAbandonedSwitchover{Target: "db-2", RetryAfter: *at(switchoverRetryDelay)}},
			member: []member{{name: "db-1", exists: true, nodeDraining: true, report: primaryReport("0/3000000", "db-2", "db-3")},
				up("db-2", replicaReport(3, 1, "0/3000000")), up("db-3", replicaReport(3, 1, "0/2000000"))},
			lease:     held("db-1"),
			wantPhase: v1alpha1.PostgresSwitchingOver, wantCurrent: "db-1", wantTgt: "db-3", wantEpoch: 4, wantEvent: "SwitchoverStarted",
			wantReplicas: []string{"db-2", "db-3"}, wantAbandoned: "db-2",
		},
		{
			name:      "the switchover's target died: an election",
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-2", PromotionEpoch: 2, SystemID: "42"},
			member:    []member{up("db-1", &v1alpha1.PostgresInstanceReport{Role: "replica", SystemID: "42"}), {name: "db-2"}, up("db-3", replicaReport(3, 1, "0/3000000"))},
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantTgt: "db-3", wantEpoch: 3, wantEvent: "FailoverStarted", wantElection: true,
			wantReplicas: []string{"db-3"},
		},
		{
			name:   "a replica that stopped streaming because its primary is cut off is still promoted",
			status: healthyStatus(),
			member: []member{up("db-1", primaryReport("0/3000000")),
				up("db-2", &v1alpha1.PostgresInstanceReport{Role: "replica", SystemID: "42", Epoch: 1, Timeline: 1, ReceivedLSN: "0/3000000"})},
			lease:     held("db-1"),
			now:       11 * time.Second,
			wantPhase: v1alpha1.PostgresFailingOver, wantCurrent: "db-1", wantEpoch: 2, wantEvent: "FailoverStarted", wantElection: true,
		},
		{
			name:      "waking from hibernation: no replica streams, so the primary keeps its place and starts again",
			status:    healthyStatus(),
			member:    []member{up("db-1", nil), up("db-2", nil), up("db-3", &v1alpha1.PostgresInstanceReport{Message: "waiting for a primary"})},
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1,
		},
		{
			name:      "an election with nothing to promote gives the place back",
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{up("db-1", nil), up("db-2", &v1alpha1.PostgresInstanceReport{Message: "waiting for a primary"})},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2,
		},
		{
			name:      "an election whose only replica's pod was evicted does not wait for its old report: it gives the place back",
			status:    v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", PromotionEpoch: 2, ElectionStartedAt: at(0), SystemID: "42"},
			member:    []member{evicted("db-1", primaryReport("0/3000000", "db-2")), evicted("db-2", replicaReport(1, 1, "0/3000000"))},
			now:       electionTimeout,
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 2,
		},
		{
			name:      "the primary's pod and its only replica's were evicted: no failover, the primary waits to start again",
			status:    healthyStatus(),
			member:    []member{evicted("db-1", primaryReport("0/3000000", "db-2")), evicted("db-2", replicaReport(1, 1, "0/3000000"))},
			lease:     held("db-1"),
			now:       11 * time.Second,
			wantPhase: v1alpha1.PostgresDegraded, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1,
		},
		{
			name:      "hibernated: nothing runs, the primary is remembered",
			spec:      &v1alpha1.PostgresClusterSpec{Instances: 2, Hibernate: true},
			status:    healthyStatus(),
			wantPhase: v1alpha1.PostgresHibernated, wantCurrent: "db-1", wantTgt: "db-1", wantEpoch: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := spec
			if tc.spec != nil {
				s = *tc.spec
			}
			e := decide(decideInput{spec: s, status: tc.status, clusterID: "db", members: tc.member, lease: tc.lease, now: t0.Add(tc.now), keptBeyond: tc.keptBeyond, withoutQuorum: tc.withoutQuorum})
			g.Expect(e.phase).To(Equal(tc.wantPhase), e.message)
			if tc.wantReason != "" {
				g.Expect(e.reason).To(Equal(tc.wantReason), e.message)
			}
			g.Expect(e.message).To(ContainSubstring(tc.wantMessage))
			g.Expect(e.current).To(Equal(tc.wantCurrent))
			g.Expect(e.target).To(Equal(tc.wantTgt))
			g.Expect(e.epoch).To(Equal(tc.wantEpoch))
			g.Expect(e.primary).To(Equal(tc.wantPrimary))
			g.Expect(e.replicas).To(Equal(tc.wantReplicas))
			g.Expect(e.electionStarted != nil).To(Equal(tc.wantElection), "election started")
			abandoned := ""
			if e.abandoned != nil {
				abandoned = e.abandoned.target
			}
			g.Expect(abandoned).To(Equal(tc.wantAbandoned), "the switchover given up that is remembered")
			if tc.wantEvent == "" {
				g.Expect(e.event).To(BeNil())
			} else {
				g.Expect(e.event).NotTo(BeNil())
				g.Expect(e.event.reason).To(Equal(tc.wantEvent))
			}
		})
	}
}

// An instance whose pod is over (phase Failed or Succeeded) does not run:
// decide sees neither it nor its last report.
func TestMemberOf(t *testing.T) {
	pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	deleting := podWith("db-2", corev1.PodRunning, "", replicaReport(1, 1, "0/3000000"))
	deleting.DeletionTimestamp = at(0)
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want member
	}{
		"running": {podWith("db-2", corev1.PodRunning, "", replicaReport(1, 1, "0/3000000")),
			member{name: "db-2", exists: true, specCurrent: true, report: replicaReport(1, 1, "0/3000000")}},
		"pending, not reported yet": {podWith("db-2", corev1.PodPending, "", nil), member{name: "db-2", exists: true, specCurrent: true}},
		"no pod":                    {nil, member{name: "db-2"}},
		"being deleted":             {deleting, member{name: "db-2"}},
		"evicted (phase Failed)": {podWith("db-2", corev1.PodFailed, "Evicted", replicaReport(1, 1, "0/3000000")),
			member{name: "db-2", over: "phase Failed, reason Evicted"}},
		"stopped (phase Succeeded)": {podWith("db-2", corev1.PodSucceeded, "", replicaReport(1, 1, "0/3000000")),
			member{name: "db-2", over: "phase Succeeded"}},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(memberOf(pg, "db-2", tc.pod, "h")).To(Equal(tc.want))
		})
	}
}

func TestParseLSN(t *testing.T) {
	g := NewWithT(t)
	g.Expect(pgspec.ParseLSN("0/3000060")).To(Equal(uint64(0x3000060)))
	g.Expect(pgspec.ParseLSN("16/B374D848")).To(Equal(uint64(0x16)<<32 | 0xB374D848))
	g.Expect(pgspec.ParseLSN("16/B374D848") > pgspec.ParseLSN("15/FFFFFFFF")).To(BeTrue())
	g.Expect(pgspec.ParseLSN("")).To(BeZero())
	g.Expect(pgspec.ParseLSN("x/y")).To(BeZero())
}

// TestFencedOnPurpose: the instance a BackupJob's run fences by annotation
// counts as fenced for decide, like one spec.fencedInstances names, so that
// an election never picks it (see the decide case above); any other
// instance does not.
func TestFencedOnPurpose(t *testing.T) {
	pg := func(fence string, spec ...string) *v1alpha1.PostgresCluster {
		p := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: v1alpha1.PostgresClusterSpec{FencedInstances: spec}}
		if fence != "" {
			p.Annotations = map[string]string{v1alpha1.PostgresBackupFenceAnnotation: fence, v1alpha1.PostgresBackupFenceByAnnotation: "nightly-1700000000"}
		}
		return p
	}
	for name, tc := range map[string]struct {
		pg       *v1alpha1.PostgresCluster
		instance string
		want     bool
	}{
		"fenced by a BackupJob's run":         {pg("db-2"), "db-2", true},
		"another instance of a fenced one":    {pg("db-2"), "db-3", false},
		"named by spec.fencedInstances":       {pg("", "db-3"), "db-3", true},
		"no fence at all":                     {pg(""), "db-2", false},
		"a backup fence of an empty instance": {pg(""), "", false},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(pgspec.FencedOnPurpose(tc.pg, tc.instance)).To(Equal(tc.want))
		})
	}
}
