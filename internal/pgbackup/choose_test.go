package pgbackup

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup/pgbackuptest"
)

// The instance a run fences: the most caught-up ready replica, never the
// primary, one fenced or leaving; the primary only of a single-instance
// cluster whose BackupJob allows it; nothing while any fence is held.
func TestChoosePostgresFence(t *testing.T) {
	fencedBy := func(pg *v1alpha1.PostgresCluster, instance, run string) *v1alpha1.PostgresCluster {
		pg.Annotations = map[string]string{v1alpha1.PostgresBackupFenceAnnotation: instance, v1alpha1.PostgresBackupFenceByAnnotation: run}
		return pg
	}
	notReady := pgbackuptest.Replica("db-3", "0/8000000")
	notReady.Ready = false
	fenced := pgbackuptest.Replica("db-3", "0/8000000")
	fenced.Fenced = true
	tests := []struct {
		name         string
		pg           *v1alpha1.PostgresCluster
		allowPrimary bool
		want         string
		wantReason   string
	}{
		{name: "the most WAL received wins", pg: pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/7000000"), pgbackuptest.Replica("db-3", "0/8000000")), want: "db-3"},
		{name: "LSNs compare as numbers, not text", pg: pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/A000000"), pgbackuptest.Replica("db-3", "0/9000000")), want: "db-2"},
		{name: "a tie goes to the lowest name", pg: pgbackuptest.Cluster(3, pgbackuptest.Replica("db-3", "0/8000000"), pgbackuptest.Replica("db-2", "0/8000000")), want: "db-2"},
		{name: "a replica not ready is not fenced", pg: pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/7000000"), notReady), want: "db-2"},
		{name: "a replica fenced already is not fenced again", pg: pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/7000000"), fenced), want: "db-2"},
		{name: "a replica beyond spec.instances is leaving", pg: pgbackuptest.Cluster(2, pgbackuptest.Replica("db-2", "0/7000000"), pgbackuptest.Replica("db-3", "0/8000000")), want: "db-2"},
		{name: "the primary is never fenced when the cluster has replicas, even allowed",
			pg: pgbackuptest.Cluster(2, notReady), allowPrimary: true, wantReason: v1alpha1.BackupJobNoReadyReplicaReason},
		{name: "the target of a switchover is not fenced", pg: func() *v1alpha1.PostgresCluster {
			pg := pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/7000000"), pgbackuptest.Replica("db-3", "0/8000000"))
			pg.Status.TargetPrimary = "db-3"
			return pg
		}(), want: "db-2"},
		{name: "any fence held makes the run wait", pg: fencedBy(pgbackuptest.Cluster(3, pgbackuptest.Replica("db-2", "0/7000000")), "db-3", "other-1700000000"),
			wantReason: v1alpha1.BackupJobFenceHeldReason},
		{name: "a single instance allowed: its ready primary", pg: pgbackuptest.Cluster(1), allowPrimary: true, want: "db-1"},
		{name: "a single instance not ready waits", pg: func() *v1alpha1.PostgresCluster {
			pg := pgbackuptest.Cluster(1)
			pg.Status.Instances[0].Ready = false
			return pg
		}(), allowPrimary: true, wantReason: v1alpha1.BackupJobNoReadyReplicaReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, wait := ChooseFence(tc.pg, tc.allowPrimary)
			g.Expect(got).To(Equal(tc.want))
			if tc.wantReason == "" {
				g.Expect(wait).To(BeNil())
			} else {
				g.Expect(wait).NotTo(BeNil())
				g.Expect(wait.Reason).To(Equal(tc.wantReason))
			}
		})
	}
}

func TestChooseBaseBackupSource(t *testing.T) {
	primary := v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, ReceivedLSN: "0/9000000"}
	replica := func(name, received string) v1alpha1.PostgresInstanceStatus {
		return v1alpha1.PostgresInstanceStatus{Name: name, Role: v1alpha1.PostgresReplicaRole, Ready: true, ReceivedLSN: received}
	}
	tests := map[string]struct {
		instances int32
		members   []v1alpha1.PostgresInstanceStatus
		want      string
	}{
		"the replica with the most WAL":   {3, []v1alpha1.PostgresInstanceStatus{primary, replica("db-2", "0/7000000"), replica("db-3", "0/8000000")}, "db-3"},
		"a fenced replica is not one":     {3, []v1alpha1.PostgresInstanceStatus{primary, replica("db-2", "0/7000000"), {Name: "db-3", Role: v1alpha1.PostgresReplicaRole, Ready: true, Fenced: true, ReceivedLSN: "0/8000000"}}, "db-2"},
		"a replica being removed is not":  {2, []v1alpha1.PostgresInstanceStatus{primary, replica("db-2", "0/7000000"), replica("db-3", "0/8000000")}, "db-2"},
		"no ready replica: the primary":   {3, []v1alpha1.PostgresInstanceStatus{primary, {Name: "db-2", Role: v1alpha1.PostgresReplicaRole}}, "db-1"},
		"a single instance: its primary":  {1, []v1alpha1.PostgresInstanceStatus{primary}, "db-1"},
		"nothing ready: the run waits":    {2, []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole}, {Name: "db-2", Role: v1alpha1.PostgresReplicaRole}}, ""},
		"a primary not yet routed: waits": {1, []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Ready: true}}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: v1alpha1.PostgresClusterSpec{Instances: tc.instances},
				Status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1", Instances: tc.members}}
			got, wait := ChooseBaseBackupSource(pg)
			g.Expect(got).To(Equal(tc.want))
			if tc.want == "" {
				g.Expect(wait).NotTo(BeNil())
				g.Expect(wait.Reason).To(Equal(v1alpha1.BackupJobNoReadyReplicaReason))
			}
		})
	}
}

func TestChooseStoreBackupSource(t *testing.T) {
	primary := v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, ReceivedLSN: "0/9000000"}
	replica := v1alpha1.PostgresInstanceStatus{Name: "db-2", Role: v1alpha1.PostgresReplicaRole, Ready: true, ReceivedLSN: "0/9000000"}
	tests := map[string]struct {
		target  string
		members []v1alpha1.PostgresInstanceStatus
		want    string
	}{
		"the ready primary, never a replica":       {"db-1", []v1alpha1.PostgresInstanceStatus{replica, primary}, "db-1"},
		"a primary not ready: waits":               {"db-1", []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole}, replica}, ""},
		"a fenced primary: waits":                  {"db-1", []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, Fenced: true}}, ""},
		"a switchover under way: waits":            {"db-2", []v1alpha1.PostgresInstanceStatus{primary, replica}, ""},
		"an instance that says primary but is not": {"db-1", []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresReplicaRole, Ready: true}}, ""},
		"no instance reported yet: waits":          {"db-1", nil, ""},
		"the primary named in status, not another": {"db-1", []v1alpha1.PostgresInstanceStatus{{Name: "db-3", Role: v1alpha1.PostgresPrimaryRole, Ready: true}}, ""},
		"a single instance: its primary, unfenced": {"db-1", []v1alpha1.PostgresInstanceStatus{primary}, "db-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: tc.target, Instances: tc.members}}
			got, wait := ChooseStoreBackupSource(pg)
			g.Expect(got).To(Equal(tc.want))
			if tc.want == "" {
				g.Expect(wait).NotTo(BeNil())
				g.Expect(wait.Reason).To(Equal(v1alpha1.BackupJobNoReadyReplicaReason))
				g.Expect(wait.Message).To(ContainSubstring("primary"))
			}
		})
	}
}
