package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
)

// The restore drill of a base backup in the object store restores it from
// the store into a temporary cluster and replays the WAL archived after
// it: batch 1 is committed before the backup, batch 2 after it and
// archived, and only then is the drill asked for, with a query that
// passes only if both batches are there. The drill passes, its result is
// on the backup's record, its temporary cluster and claims are deleted,
// and it archived nothing into its source's path (no history of a
// timeline after the source's, which its promotion made).
func TestPostgresObjectStoreRestoreDrill(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "drills", "db")
	env.newPostgresCluster(t, ns, "db", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = archivingTo(store)
		pg.Spec.SuperuserAccess = true
	})
	env.waitPostgresReady(t, ns, "db", 1)
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	password := env.appSecret(g, ns, "db")["password"]
	conn := env.connectWhenRouted(t, ns, "db-rw", password)
	defer conn.Close(context.Background())
	_, err := conn.Exec(t.Context(), "CREATE TABLE batches (batch int, id int PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())
	insertBatch(t, conn, 1, 10)

	beforeBackup := time.Now().Add(-time.Minute).Truncate(time.Second)
	bj := env.newStoreBackupJob(t, ns, "db")
	var run string
	g.Eventually(func(g Gomega) {
		backups, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(backups).To(HaveLen(1), "a base backup in the store")
		run = backups[0].ID
	}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(Succeed())

	insertBatch(t, conn, 2, 10)
	var segment string
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&segment)).To(Succeed())
	env.superuserExec(t, ns, "db", "SELECT pg_switch_wal()")
	g.Eventually(func(g Gomega) string {
		return env.postgresCluster(g, ns, "db").Status.Archiving.LastArchivedWAL
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(func(s string) bool { return s >= segment }), "batch 2 archived, in %s", segment)

	started := time.Now()
	g.Eventually(func() error {
		current := &v1alpha1.BackupJob{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(bj), current); err != nil {
			return err
		}
		current.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) = 20 AND count(DISTINCT batch) = 2 FROM batches"}
		return env.Client.Update(t.Context(), current)
	}).WithTimeout(30 * time.Second).Should(Succeed())

	var drill string
	g.Eventually(func(g Gomega) {
		current := &v1alpha1.BackupJob{}
		g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: bj.Name}, current)).To(Succeed())
		drills := &v1alpha1.PostgresClusterList{}
		g.Expect(env.Client.List(t.Context(), drills, client.InNamespace(ns), client.MatchingLabels{backupjob.DrillLabel: run})).To(Succeed())
		for _, d := range drills.Items {
			drill = d.Name
			g.Expect(d.Spec.Bootstrap.FromBackup.ObjectStore).NotTo(BeNil(), "restored from the store")
		}
		c := findCondition(current, v1alpha1.BackupJobVerifiedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(drills.Items).To(BeEmpty(), "the drill's temporary cluster is deleted")
	}).WithTimeout(2 * pgTimeout).WithPolling(time.Second).Should(Succeed())
	t.Logf("restore drill %s of object-store backup %s passed %s after it was asked for", drill, run, time.Since(started).Round(time.Second))
	g.Expect(drill).NotTo(BeEmpty(), "a drill was seen")

	record := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: run}, record)).To(Succeed())
	g.Expect(record.Annotations).To(HaveKeyWithValue(backupjob.VerifiedAnnotation, "Passed"), "the result, on the backup's record")
	g.Eventually(env.drillClaims(ns)).WithTimeout(time.Minute).Should(BeEmpty(), "the claims of the drill's cluster go with it")
	wal, err := archive.ArchivedWAL(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wal).NotTo(ContainElement(HaveSuffix(".history")), "the drill, promoted on timeline 2, archived nothing into its source's path")

	// A drill at the backup's end (verify.recoveryTarget BackupEnd)
	// recovers to the point in time the run marked just after the backup:
	// batches 1 and 2 are in the backup; batch 3, committed and archived
	// after the run, is not in the drill, though it replays the archive
	// that holds it.
	atEnd := env.newPostgresBackupJobTo(t, ns, "at-end", "db", false, &v1alpha1.BackupTarget{ObjectStore: &v1alpha1.BackupObjectStoreTarget{}})
	var point string
	var second string
	g.Eventually(func(g Gomega) {
		records := &corev1.ConfigMapList{}
		g.Expect(env.Client.List(t.Context(), records, client.InNamespace(ns), client.MatchingLabels{v1alpha1.BackupJobLabel: atEnd.Name})).To(Succeed())
		g.Expect(records.Items).To(HaveLen(1))
		second, point = records.Items[0].Name, records.Items[0].Annotations[v1alpha1.BackupPointInTimeAnnotation]
		g.Expect(point).NotTo(BeEmpty(), "the run marked the point in time after its backup")
	}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(Succeed())
	insertBatch(t, conn, 3, 10)
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&segment)).To(Succeed())
	env.superuserExec(t, ns, "db", "SELECT pg_switch_wal()")
	g.Eventually(func(g Gomega) string {
		return env.postgresCluster(g, ns, "db").Status.Archiving.LastArchivedWAL
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(func(s string) bool { return s >= segment }), "batch 3 archived, in %s", segment)
	g.Eventually(func() error {
		current := &v1alpha1.BackupJob{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(atEnd), current); err != nil {
			return err
		}
		current.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) = 20 AND count(DISTINCT batch) = 2 FROM batches",
			RecoveryTarget: v1alpha1.DrillToBackupEnd}
		return env.Client.Update(t.Context(), current)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	var target string
	g.Eventually(func(g Gomega) {
		drills := &v1alpha1.PostgresClusterList{}
		g.Expect(env.Client.List(t.Context(), drills, client.InNamespace(ns), client.MatchingLabels{backupjob.DrillLabel: second})).To(Succeed())
		for _, d := range drills.Items {
			if at := d.Spec.Bootstrap.FromBackup.TargetTime; at != nil {
				target = at.UTC().Format(time.RFC3339)
			}
		}
		record := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: second}, record)).To(Succeed())
		g.Expect(record.Annotations).To(HaveKeyWithValue(backupjob.VerifiedAnnotation, "Passed"), "the drill at the backup's end: %s", record.Annotations[backupjob.VerifiedMessageAnnotation])
	}).WithTimeout(2 * pgTimeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(target).To(Equal(point), "the drill recovered to the point in time on the backup's record")
	t.Logf("restore drill of %s at its end, %s, passed", second, point)

	// A restore naming a backup is refused, naming the field, when the
	// store lacks it or it is consistent only after the target.
	named := func(name string, target *metav1.Time) func(*v1alpha1.PostgresCluster) {
		return func(pg *v1alpha1.PostgresCluster) {
			source := store
			source.Path = ns + "/db"
			pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{ObjectStore: &source, Name: name, TargetTime: target}}
		}
	}
	env.newPostgresCluster(t, ns, "no-such-backup", 1, 0, named("nightly-0", nil))
	env.newPostgresCluster(t, ns, "named-too-early", 1, 0, named(run, &metav1.Time{Time: beforeBackup}))
	for cluster, want := range map[string]string{
		"no-such-backup":  "spec.bootstrap.fromBackup.name: the object store holds no base backup nightly-0 (it holds: " + run + ", " + second + ")",
		"named-too-early": "spec.bootstrap.fromBackup.targetTime " + beforeBackup.UTC().Format(time.RFC3339) + " is before base backup " + run + " was consistent",
	} {
		g.Eventually(func(g Gomega) string {
			for _, i := range env.postgresCluster(g, ns, cluster).Status.Instances {
				return i.Message
			}
			return ""
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring(want), cluster)
	}

	// A backup off the archive's latest timeline cannot start a recovery
	// that follows it: with a timeline 2 that left timeline 1 before the
	// backup was consistent (its history file put in the store, as a
	// cluster restored from an older point onto this path would have), a
	// restore naming the backup is refused before anything is fetched,
	// saying which timeline and history.
	history := filepath.Join(t.TempDir(), "00000002.history")
	g.Expect(os.WriteFile(history, []byte("1\t0/1000000\tbefore the backups\n"), 0o600)).To(Succeed())
	g.Expect(archive.ArchiveWAL(t.Context(), history)).To(Succeed())
	env.newPostgresCluster(t, ns, "off-timeline", 1, 0, named(run, nil))
	g.Eventually(func(g Gomega) string {
		for _, i := range env.postgresCluster(g, ns, "off-timeline").Status.Instances {
			return i.Message
		}
		return ""
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(And(
		ContainSubstring("spec.bootstrap.fromBackup.name: base backup "+run+" is on timeline 1 up to "),
		ContainSubstring("the archive's latest timeline 2 does not descend from it there (its history: timeline 1 until 0/1000000)")))
}
