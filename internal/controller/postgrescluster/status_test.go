package postgrescluster

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/controller/kit/kstatustest"
)

// The status tells the tools that read kstatus (Flux, Argo CD, kubectl
// wait) what a person would: a cluster setting up or failing over is in
// progress, a healthy one current, and one that waits for a person failed.
func TestStatusForKStatus(t *testing.T) {
	healthy := election{phase: v1alpha1.PostgresHealthy, reason: v1alpha1.PostgresAvailableReason, message: "Instance db-1 is the primary",
		current: "db-1", target: "db-1", primary: "db-1", replicas: []string{"db-2"}}
	members := []member{up("db-1", primaryReport("0/3000000", "db-2")), up("db-2", replicaReport(1, 1, "0/3000000"))}
	routed := map[string]bool{"db-1": true, "db-2": true}
	for _, tc := range []struct {
		name        string
		e           election
		members     []member
		problem     *cause
		want        status.Status
		wantStalled string // the Stalled condition's reason when True
	}{
		{name: "healthy, every replica streaming", e: healthy, members: members, want: status.CurrentStatus},
		{
			name: "setting up: the first instance initializes",
			e: election{phase: v1alpha1.PostgresInitializing, reason: v1alpha1.PostgresInitializingReason, message: "Instance db-1 initializes the database",
				target: "db-1"},
			members: []member{up("db-1", nil), up("db-2", nil)},
			want:    status.InProgressStatus,
		},
		{
			name: "the primary up, a replica still cloning",
			e: election{phase: v1alpha1.PostgresHealthy, reason: v1alpha1.PostgresAvailableReason, message: "Instance db-1 is the primary",
				current: "db-1", target: "db-1", primary: "db-1"},
			members: []member{up("db-1", primaryReport("0/3000000")), up("db-2", nil)},
			want:    status.InProgressStatus,
		},
		{
			name: "failing over",
			e: election{phase: v1alpha1.PostgresFailingOver, reason: v1alpha1.PostgresFailingOverReason, message: "Promoting db-2 in place of db-1",
				current: "db-1", target: "db-2"},
			members: members, want: status.InProgressStatus,
		},
		{
			name: "the primary failed and its failover delay runs: it may come back by itself",
			e: election{phase: v1alpha1.PostgresDegraded, reason: v1alpha1.PostgresNoPrimaryReason, message: "The primary db-1 is not ready",
				current: "db-1", target: "db-1", replicas: []string{"db-2"}},
			members: members, want: status.InProgressStatus,
		},
		{
			name: "a failover that waits for a quorum of standbys waits for a person or the primary's return",
			e: election{phase: v1alpha1.PostgresDegraded, reason: v1alpha1.PostgresWaitingForQuorumReason, message: "no failover: waiting for db-3",
				current: "db-1"},
			members: members, want: status.FailedStatus, wantStalled: v1alpha1.PostgresWaitingForQuorumReason,
		},
		{
			name: "a spec the API server refused", e: healthy, members: members,
			problem: &cause{Reason: v1alpha1.PostgresInvalidSpecReason, Message: "the claim's size is refused"},
			want:    status.FailedStatus, wantStalled: v1alpha1.PostgresInvalidSpecReason,
		},
		{
			name: "a write that failed is retried", e: healthy, members: members,
			problem: &cause{Reason: v1alpha1.PostgresApplyFailedReason, Message: "create Service db-rw: the webhook is down"},
			want:    status.InProgressStatus,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pg := &v1alpha1.PostgresCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Generation: 3},
				Spec:       v1alpha1.PostgresClusterSpec{Instances: 2, Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
			}
			pg.Status = computeStatus(pg, &observation{members: tc.members, routed: routed}, tc.e, credentials{}, tc.problem, t0)
			got, message := kstatustest.Of(t, pg)
			g.Expect(got).To(Equal(tc.want), message)
			stalled := meta.FindStatusCondition(pg.Status.Conditions, kit.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			if tc.wantStalled != "" {
				g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(stalled.Reason).To(Equal(tc.wantStalled))
			} else {
				g.Expect(stalled.Status).To(Equal(metav1.ConditionFalse))
			}
		})
	}
}
