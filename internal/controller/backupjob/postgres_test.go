package backupjob

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup/pgbackuptest"
)

// What a run holding a fence does next, from what was observed.
func TestNextFenceStep(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	bj := testBackupJob()
	bj.Spec.Source = v1alpha1.BackupSource{PostgresCluster: "db"}
	bj.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
	bj.Spec.JobTemplate = nil
	rn := newRun(bj.Name, now.Add(-time.Minute), "")
	stopped := func(run string, clean bool) *v1alpha1.PostgresCluster {
		s := pgbackuptest.Replica("db-2", "0/7000000")
		s.Ready, s.Role, s.Fenced, s.BackupFence, s.CleanShutdown = false, "", true, run, clean
		return pgbackuptest.Cluster(3, s)
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
