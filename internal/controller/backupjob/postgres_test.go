package backupjob

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func replica(name, received string) v1alpha1.PostgresInstanceStatus {
	return v1alpha1.PostgresInstanceStatus{Name: name, Role: v1alpha1.PostgresReplicaRole, Ready: true, ReceivedLSN: received, ReplayedLSN: received}
}

func testCluster(instances int32, members ...v1alpha1.PostgresInstanceStatus) *v1alpha1.PostgresCluster {
	return &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team"},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: instances},
		Status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1",
			Instances: append([]v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, ReceivedLSN: "0/9000000"}}, members...)},
	}
}

// The instance a run fences: the most caught-up ready replica, never the
// primary, one fenced or leaving; the primary only of a single-instance
// cluster whose BackupJob allows it; nothing while any fence is held.
func TestChoosePostgresFence(t *testing.T) {
	fencedBy := func(pg *v1alpha1.PostgresCluster, instance, run string) *v1alpha1.PostgresCluster {
		pg.Annotations = map[string]string{v1alpha1.PostgresBackupFenceAnnotation: instance, v1alpha1.PostgresBackupFenceByAnnotation: run}
		return pg
	}
	notReady := replica("db-3", "0/8000000")
	notReady.Ready = false
	fenced := replica("db-3", "0/8000000")
	fenced.Fenced = true
	tests := []struct {
		name         string
		pg           *v1alpha1.PostgresCluster
		allowPrimary bool
		want         string
		wantReason   string
	}{
		{name: "the most WAL received wins", pg: testCluster(3, replica("db-2", "0/7000000"), replica("db-3", "0/8000000")), want: "db-3"},
		{name: "LSNs compare as numbers, not text", pg: testCluster(3, replica("db-2", "0/A000000"), replica("db-3", "0/9000000")), want: "db-2"},
		{name: "a tie goes to the lowest name", pg: testCluster(3, replica("db-3", "0/8000000"), replica("db-2", "0/8000000")), want: "db-2"},
		{name: "a replica not ready is not fenced", pg: testCluster(3, replica("db-2", "0/7000000"), notReady), want: "db-2"},
		{name: "a replica fenced already is not fenced again", pg: testCluster(3, replica("db-2", "0/7000000"), fenced), want: "db-2"},
		{name: "a replica beyond spec.instances is leaving", pg: testCluster(2, replica("db-2", "0/7000000"), replica("db-3", "0/8000000")), want: "db-2"},
		{name: "the primary is never fenced when the cluster has replicas, even allowed",
			pg: testCluster(2, notReady), allowPrimary: true, wantReason: v1alpha1.BackupJobNoReadyReplicaReason},
		{name: "the target of a switchover is not fenced", pg: func() *v1alpha1.PostgresCluster {
			pg := testCluster(3, replica("db-2", "0/7000000"), replica("db-3", "0/8000000"))
			pg.Status.TargetPrimary = "db-3"
			return pg
		}(), want: "db-2"},
		{name: "any fence held makes the run wait", pg: fencedBy(testCluster(3, replica("db-2", "0/7000000")), "db-3", "other-1700000000"),
			wantReason: v1alpha1.BackupJobFenceHeldReason},
		{name: "a single instance allowed: its ready primary", pg: testCluster(1), allowPrimary: true, want: "db-1"},
		{name: "a single instance not ready waits", pg: func() *v1alpha1.PostgresCluster {
			pg := testCluster(1)
			pg.Status.Instances[0].Ready = false
			return pg
		}(), allowPrimary: true, wantReason: v1alpha1.BackupJobNoReadyReplicaReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, wait := choosePostgresFence(tc.pg, tc.allowPrimary)
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

// What a run holding a fence does next, from what was observed.
func TestNextFenceStep(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	bj := testBackupJob()
	bj.Spec.Source = v1alpha1.BackupSource{PostgresCluster: "db"}
	bj.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
	bj.Spec.JobTemplate = nil
	rn := newRun(bj.Name, now.Add(-time.Minute), "")
	stopped := func(run string, clean bool) *v1alpha1.PostgresCluster {
		s := replica("db-2", "0/7000000")
		s.Ready, s.Role, s.Fenced, s.BackupFence, s.CleanShutdown = false, "", true, run, clean
		return testCluster(3, s)
	}
	f := func(pg *v1alpha1.PostgresCluster, since time.Duration) *fence {
		return &fence{cluster: pg, instance: "db-2", run: rn, since: now.Add(-since)}
	}
	snapshot := func(result v1alpha1.BackupResult) *backup {
		return &backup{name: rn.name, kind: v1alpha1.SnapshotBackup, result: result, object: &corev1.PersistentVolumeClaim{}}
	}
	other := bj.DeepCopy()
	other.Spec.Source.PostgresCluster = "other"
	tests := []struct {
		name string
		bj   *v1alpha1.BackupJob
		f    *fence
		b    *backup
		want fenceStep
	}{
		{name: "no clean shutdown yet: wait", f: f(stopped("", false), time.Second), want: fenceWait},
		{name: "a clean shutdown of an earlier run's fence is not this run's", f: f(stopped("nightly-1", true), time.Second), want: fenceWait},
		{name: "stopped cleanly for this run: snapshot", f: f(stopped(rn.name, true), time.Second), want: fenceSnapshot},
		{name: "stopped, not cleanly: wait", f: f(stopped(rn.name, false), time.Second), want: fenceWait},
		{name: "snapshot not ready: keep the fence", f: f(stopped(rn.name, true), time.Hour), b: snapshot(v1alpha1.BackupRunning), want: fenceWait},
		{name: "snapshot ready: unfence", f: f(stopped(rn.name, true), time.Second), b: snapshot(v1alpha1.BackupSucceeded), want: fenceRelease},
		{name: "snapshot failed: unfence", f: f(stopped(rn.name, true), time.Second), b: snapshot(v1alpha1.BackupFailed), want: fenceRelease},
		{name: "the BackupJob backs up another cluster now: unfence", bj: other, f: f(stopped("", false), time.Second), want: fenceRelease},
		{name: "no clean shutdown by the timeout: fail", f: f(stopped("", false), fenceTimeout), want: fenceTimedOut},
		{name: "a fence without its time: fail", f: &fence{cluster: stopped("", false), instance: "db-2", run: rn}, want: fenceTimedOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bj
			if tc.bj != nil {
				b = tc.bj
			}
			NewWithT(t).Expect(nextFenceStep(b, tc.f, tc.b, now)).To(Equal(tc.want))
		})
	}
}

// A fence is a run's of a BackupJob only when it names a run of exactly
// that BackupJob.
func TestFenceOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	pg := func(by string) *v1alpha1.PostgresCluster {
		return &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{
			v1alpha1.PostgresBackupFenceAnnotation: "db-2", v1alpha1.PostgresBackupFenceByAnnotation: by,
			v1alpha1.PostgresBackupFenceSinceAnnotation: stamp(at), v1alpha1.PostgresBackupFenceRunNowAnnotation: "now-1"}}}
	}
	g := NewWithT(t)
	f := fenceOf("nightly", pg(RunName("nightly", at)))
	g.Expect(f).NotTo(BeNil())
	g.Expect(f.run).To(Equal(run{name: RunName("nightly", at), scheduled: at, runNow: "now-1"}))
	g.Expect(f.since).To(Equal(at))
	g.Expect(fenceOf("nightly-1", pg(RunName("nightly", at)))).To(BeNil(), "another BackupJob's name as a prefix")
	g.Expect(fenceOf("nightly", pg(RunName("nightly-1", at)))).To(BeNil(), "a BackupJob whose name extends this one's")
	g.Expect(fenceOf("nightly", pg("by-hand"))).To(BeNil())
	long := "a-backupjob-whose-name-is-long-enough-to-be-hashed-x"
	g.Expect(fenceOf(long, pg(RunName(long, at)))).NotTo(BeNil(), "a hashed run name")
}
