package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/internal/instance/postgres"
)

// pgBackupTimeout bounds a PostgresCluster's backup: a replica's clean
// shutdown, the simulated snapshot's copy of its data directory, and the
// operator's reconciles in between.
const pgBackupTimeout = 90 * time.Second

func (e *environment) newPostgresBackupJob(t *testing.T, ns, name, cluster string, allowPrimary bool) *v1alpha1.BackupJob {
	t.Helper()
	return e.newPostgresBackupJobTo(t, ns, name, cluster, allowPrimary, &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}})
}

func (e *environment) newPostgresBackupJobTo(t *testing.T, ns, name, cluster string, allowPrimary bool, target *v1alpha1.BackupTarget, change ...func(*v1alpha1.BackupJob)) *v1alpha1.BackupJob {
	t.Helper()
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.BackupJobSpec{
			// In effect never on schedule: runs by runNow.
			Schedule: "0 0 1 1 *",
			RunNow:   "first",
			Source:   v1alpha1.BackupSource{PostgresCluster: cluster, AllowPrimaryFencing: allowPrimary},
			Target:   target,
		},
	}
	for _, c := range change {
		c(bj)
	}
	if err := e.Client.Create(t.Context(), bj); err != nil {
		t.Fatal(err)
	}
	return bj
}

// A BackupJob of a three-instance PostgresCluster (one synchronous
// standby, so that the other replica serves while one is fenced) fences a
// replica, takes
// a cold snapshot of its claim and unfences it, while a writer goes on
// through db-rw without a single failed write; the backup records where
// its data stands, no fence remains, and a new PostgresCluster restored
// from it holds every row committed before the backup was asked for.
func TestPostgresBackupAndRestore(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "db", 3, 1, nil)
	env.waitPostgresReady(t, ns, "db", 3)
	password := env.appSecret(g, ns, "db")["password"]

	env.createWritesTable(t, ns, "db", password)
	w := env.startWriter(t, ns, "db", password)
	w.resumes(g, 20, time.Minute)

	w.mu.Lock()
	before := append([]int64(nil), w.ids...)
	w.mu.Unlock()
	started := time.Now()
	bj := env.newPostgresBackupJob(t, ns, "nightly", "db", false)

	var backup snapshotv1.VolumeSnapshot
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		for _, i := range pg.Status.Instances {
			if i.Fenced && i.BackupFence != "" {
				g.Expect(i.Name).NotTo(Equal(pg.Status.CurrentPrimary), "a replica is fenced, never the primary")
			}
		}
		list := &snapshotv1.VolumeSnapshotList{}
		g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
		var ours []snapshotv1.VolumeSnapshot
		for _, s := range list.Items {
			if s.Namespace == ns {
				ours = append(ours, s)
			}
		}
		g.Expect(ours).To(HaveLen(1))
		backup = ours[0]
		g.Expect(backup.Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"))
		g.Expect(pg.Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation), "no fence remains")
	}).WithTimeout(pgBackupTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("backup %s ready %s after it was asked for", backup.Name, time.Since(started).Round(100*time.Millisecond))
	g.Expect(*backup.Spec.Source.PersistentVolumeClaimName).To(BeElementOf("db-2", "db-3"))
	// The PostgresCluster told of the fence while it lasted: its event is
	// recorded from the status that showed it.
	fenced := "Instance " + *backup.Spec.Source.PersistentVolumeClaimName + " stopped PostgreSQL"
	g.Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "PostgresCluster" && ev.Regarding.Name == "db" && ev.Reason == "InstanceFenced" && strings.HasPrefix(ev.Note, fenced) {
				notes = append(notes, ev.Note)
			}
		}
		return notes
	}).WithTimeout(10*time.Second).Should(HaveLen(1), "an InstanceFenced event of the backed-up replica")
	g.Expect(backup.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"),
		HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, *backup.Spec.Source.PersistentVolumeClaimName), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1"),
		HaveKey(v1alpha1.BackupCheckpointLSNAnnotation)))
	g.Expect(backup.Annotations[v1alpha1.BackupCheckpointLSNAnnotation]).To(MatchRegexp(`^[0-9A-F]+/[0-9A-F]+$`))

	// The replica catches up, and the writer never failed.
	env.waitPostgresReady(t, ns, "db", 3)
	w.resumes(g, 10, time.Minute)
	g.Expect(w.failures.Load()).To(BeZero(), "writes that failed: fencing a replica costs no write")
	all := w.halt()
	g.Expect(env.getBackupJobCondition(g, ns, bj.Name, v1alpha1.BackupJobLastRunSucceededCondition)).To(Equal(metav1.ConditionTrue))

	env.newPostgresCluster(t, ns, "restored", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: bj.Name}}
	})
	env.waitPostgresReady(t, ns, "restored", 1)
	restoredPassword := env.appSecret(g, ns, "restored")["password"]
	g.Expect(env.missingRows(t, ns, "restored", restoredPassword, before)).To(BeZero(),
		"rows committed before the backup was asked for, of %d", len(before))
	t.Logf("%d rows committed before the backup, all restored; %d committed in all, none failed", len(before), len(all))
}

// A BackupJob with a volume target streams a base backup of a replica of
// a three-instance PostgresCluster into a new claim: the local cluster's
// simulation runs the Job's command (the operator's binary, pg_basebackup
// and pg_verifybackup) against the real PostgreSQL instances. No fence, no
// failed write; the backup records the instance, timeline, and the WAL
// positions where it starts and from which it is consistent (its end); a
// new PostgresCluster restored from it holds every row whose commit ended
// before its end.
func TestPostgresBaseBackupAndRestore(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "db", 3, 1, nil)
	env.waitPostgresReady(t, ns, "db", 3)
	password := env.appSecret(g, ns, "db")["password"]

	env.createWritesTable(t, ns, "db", password)
	w := env.startWriterWith(t, ns, "db", password, true)
	w.resumes(g, 20, time.Minute)
	started := time.Now()
	bj := env.newPostgresBackupJobTo(t, ns, "basebackup", "db", false, &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}},
		func(bj *v1alpha1.BackupJob) {
			bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) >= 20 FROM writes"}
		})

	var backup corev1.PersistentVolumeClaim
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "db").Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation), "a base backup fences nothing")
		list := &corev1.PersistentVolumeClaimList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.BackupJobLabel: bj.Name})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		backup = list.Items[0]
		g.Expect(backup.Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"), "the backup's result; its message: %s",
			backup.Annotations[backupjob.ResultMessageAnnotation])
	}).WithTimeout(pgBackupTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("base backup %s complete %s after it was asked for", backup.Name, time.Since(started).Round(100*time.Millisecond))
	g.Expect(backup.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"),
		HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, BeElementOf("db-2", "db-3")), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1")))
	end, err := postgres.ParseLSN(backup.Annotations[v1alpha1.BackupEndLSNAnnotation])
	g.Expect(err).NotTo(HaveOccurred(), "the end LSN the Job's pod reported")
	g.Expect(backup.Annotations).To(HaveKey(v1alpha1.BackupStartLSNAnnotation))

	w.resumes(g, 10, time.Minute)
	g.Expect(w.failures.Load()).To(BeZero(), "writes that failed: a base backup costs no write")
	w.halt()
	var before []int64
	for id, after := range w.afterCommit {
		if after <= end {
			before = append(before, id)
		}
	}
	g.Expect(len(before)).To(BeNumerically(">=", 20), "rows committed before the backup's end")

	env.newPostgresCluster(t, ns, "restored", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: bj.Name}}
	})
	env.waitPostgresReady(t, ns, "restored", 1)
	restoredPassword := env.appSecret(g, ns, "restored")["password"]
	g.Expect(env.missingRows(t, ns, "restored", restoredPassword, before)).To(BeZero(),
		"rows whose commit ended before the backup's end LSN %s, of %d", end, len(before))
	t.Logf("%d rows committed before the base backup's end LSN %s, all restored", len(before), end)

	// Its drill restored it into a temporary cluster and ran the query
	// there: passed, and the temporary cluster is gone. A query the
	// restored copy refuses fails its drill with the database's message.
	env.newPostgresBackupJobTo(t, ns, "wrong-query", "db", false, &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}},
		func(bj *v1alpha1.BackupJob) {
			bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) > 0 FROM invoices"}
		})
	g.Eventually(func(g Gomega) {
		passed := &v1alpha1.BackupJob{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: bj.Name}, passed)).To(Succeed())
		c := findCondition(passed, v1alpha1.BackupJobVerifiedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		failed := &v1alpha1.BackupJob{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "wrong-query"}, failed)).To(Succeed())
		c = findCondition(failed, v1alpha1.BackupJobVerifiedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Message).To(ContainSubstring(`relation "invoices" does not exist`), "the database's message")
		drills := &v1alpha1.PostgresClusterList{}
		g.Expect(env.Client.List(context.Background(), drills, client.InNamespace(ns), client.HasLabels{backupjob.DrillLabel})).To(Succeed())
		g.Expect(drills.Items).To(BeEmpty(), "the drills' temporary clusters are deleted")
	}).WithTimeout(2 * pgTimeout).WithPolling(time.Second).Should(Succeed())
	g.Eventually(env.drillClaims(ns)).WithTimeout(time.Minute).Should(BeEmpty(), "the claims of the drills' clusters go with them")
}

// A single-instance cluster is not fenced without allowPrimaryFencing: the
// run is refused with a message, and the cluster is not touched.
func TestPostgresBackupSingleInstanceRefused(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "solo", 1, 0, nil)
	env.waitPostgresReady(t, ns, "solo", 1)
	bj := env.newPostgresBackupJob(t, ns, "nightly", "solo", false)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.BackupJob{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: bj.Name}, got)).To(Succeed())
		c := findCondition(got, v1alpha1.BackupJobDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobPrimaryFencingRefusedReason))
		g.Expect(c.Message).To(ContainSubstring("allowPrimaryFencing"))
		g.Expect(got.Status.LastRunNow).To(Equal("first"), "the request was handled")
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	pg := env.postgresCluster(g, ns, "solo")
	g.Expect(pg.Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))
	g.Expect(pg.Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceByAnnotation))
	for _, i := range pg.Status.Instances {
		g.Expect(i.Fenced).To(BeFalse(), "instance %s", i.Name)
	}
}

func findCondition(bj *v1alpha1.BackupJob, conditionType string) *metav1.Condition {
	for i := range bj.Status.Conditions {
		if bj.Status.Conditions[i].Type == conditionType {
			return &bj.Status.Conditions[i]
		}
	}
	return nil
}

func (e *environment) getBackupJobCondition(g Gomega, ns, name, conditionType string) metav1.ConditionStatus {
	got := &v1alpha1.BackupJob{}
	g.Expect(e.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, got)).To(Succeed())
	if c := findCondition(got, conditionType); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// drillClaims lists the claims of restore drills' clusters left in ns.
func (e *environment) drillClaims(ns string) func(g Gomega) []string {
	return func(g Gomega) []string {
		claims := &corev1.PersistentVolumeClaimList{}
		g.Expect(e.Client.List(context.Background(), claims, client.InNamespace(ns))).To(Succeed())
		var left []string
		for _, c := range claims.Items {
			if strings.HasPrefix(c.Name, "drill-") {
				left = append(left, c.Name)
			}
		}
		return left
	}
}
