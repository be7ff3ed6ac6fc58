package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
)

// insertBatch commits rows id..id+n-1 of batch through conn, one
// transaction each.
func insertBatch(t *testing.T, conn *pgx.Conn, batch, n int) {
	t.Helper()
	for i := range n {
		if _, err := conn.Exec(t.Context(), "INSERT INTO batches (batch, id) VALUES ($1, $2)", batch, batch*100+i); err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
	}
}

// batchesOf are the batches a restored cluster holds, with their row
// counts; "gone" when the table is not there.
func (e *environment) batchesOf(t *testing.T, ns, cluster string) string {
	t.Helper()
	g := NewWithT(t)
	password := e.appSecret(g, ns, cluster)["password"]
	conn := e.connectWhenRouted(t, ns, cluster+"-rw", password)
	defer conn.Close(context.Background())
	var got string
	err := conn.QueryRow(t.Context(), "SELECT coalesce(string_agg(batch || ':' || n, ' ' ORDER BY batch), '') FROM (SELECT batch, count(*) AS n FROM batches GROUP BY batch) b").Scan(&got)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return "gone"
	}
	g.Expect(err).NotTo(HaveOccurred())
	return got
}

// Point-in-time recovery from the object store: rows are committed in
// three batches, with a restore point after the first, the time and the
// WAL position noted after the second, then the table is dropped. A new
// cluster restored at that time holds exactly batches 1 and 2 and the
// table (its manifest written by kubectl platform pg restore, which refuses
// a time before the first recoverability point); one restored at that
// position the same; one restored at the
// restore point batch 1 alone. A target before the oldest base backup, or
// after the archive's end, is refused with the reason. The source cluster need not run: the store is
// enough.
func TestPostgresClusterPointInTimeRecovery(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "pitr", "db")
	env.newPostgresCluster(t, ns, "db", 2, 1, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = archivingTo(store)
		pg.Spec.SuperuserAccess = true
	})
	env.waitPostgresReady(t, ns, "db", 2)
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	password := env.appSecret(g, ns, "db")["password"]
	conn := env.connectWhenRouted(t, ns, "db-rw", password)
	defer conn.Close(context.Background())
	_, err := conn.Exec(t.Context(), "CREATE TABLE batches (batch int, id int PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())

	beforeBackups := time.Now().Add(-time.Hour).Truncate(time.Second)
	env.newStoreBackupJob(t, ns, "db")
	g.Eventually(func(g Gomega) int {
		backups, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		return len(backups)
	}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(Equal(1), "a base backup in the store")

	insertBatch(t, conn, 1, 10)
	// Restore points and WAL switches are the superuser's to make.
	env.superuserExec(t, ns, "db", "SELECT pg_create_restore_point('after-batch-1')")
	insertBatch(t, conn, 2, 10)
	var afterBatch2 string
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_current_wal_lsn()::text").Scan(&afterBatch2)).To(Succeed())
	// Recovery targets are whole seconds (RFC 3339): the target falls a
	// moment after batch 2 and a second before batch 3.
	time.Sleep(1100 * time.Millisecond)
	target := time.Now().Truncate(time.Second)
	time.Sleep(1100 * time.Millisecond)
	insertBatch(t, conn, 3, 10)
	_, err = conn.Exec(t.Context(), "DROP TABLE batches")
	g.Expect(err).NotTo(HaveOccurred())
	var dropSegment string
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&dropSegment)).To(Succeed())
	env.superuserExec(t, ns, "db", "SELECT pg_switch_wal()")
	g.Eventually(func(g Gomega) string {
		return env.postgresCluster(g, ns, "db").Status.Archiving.LastArchivedWAL
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Satisfy(func(s string) bool { return s >= dropSegment }), "the drop archived, in %s", dropSegment)
	t.Logf("batch 2 ends at %s; target time %s; the drop is in %s", afterBatch2, target.Format(time.RFC3339), dropSegment)

	from := func(change func(*v1alpha1.PostgresFromBackup)) func(*v1alpha1.PostgresCluster) {
		return func(pg *v1alpha1.PostgresCluster) {
			source := store
			source.Path = ns + "/db"
			f := &v1alpha1.PostgresFromBackup{ObjectStore: &source}
			change(f)
			pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: f}
		}
	}
	started := time.Now()
	env.restoreWithPlugin(t, ns, "db", "at-time", target, beforeBackups)
	env.newPostgresCluster(t, ns, "at-lsn", 1, 0, from(func(f *v1alpha1.PostgresFromBackup) { f.TargetLSN = afterBatch2 }))
	env.newPostgresCluster(t, ns, "at-name", 1, 0, from(func(f *v1alpha1.PostgresFromBackup) { f.TargetName = "after-batch-1" }))
	env.newPostgresCluster(t, ns, "too-early", 1, 0, from(func(f *v1alpha1.PostgresFromBackup) { f.TargetTime = &metav1.Time{Time: beforeBackups} }))
	env.newPostgresCluster(t, ns, "too-late", 1, 0, from(func(f *v1alpha1.PostgresFromBackup) {
		f.TargetTime = &metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)}
	}))
	for _, name := range []string{"at-time", "at-lsn", "at-name"} {
		env.waitPostgresReady(t, ns, name, 1)
	}
	t.Logf("three point-in-time restores ready %s after they were created", time.Since(started).Round(time.Second))
	g.Expect(env.batchesOf(t, ns, "at-time")).To(Equal("1:10 2:10"), "restored at %s", target.Format(time.RFC3339))
	g.Expect(env.batchesOf(t, ns, "at-lsn")).To(Equal("1:10 2:10"), "restored at %s", afterBatch2)
	g.Expect(env.batchesOf(t, ns, "at-name")).To(Equal("1:10"), "restored at the restore point")

	g.Eventually(func(g Gomega) string {
		pg := env.postgresCluster(g, ns, "too-early")
		for _, i := range pg.Status.Instances {
			return i.Message
		}
		return ""
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("before the oldest base backup"), "a target before every backup is refused, saying why")
	g.Expect(pgCondition(env.postgresCluster(g, ns, "too-early"), v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionFalse))
	g.Eventually(func(g Gomega) string {
		pg := env.postgresCluster(g, ns, "too-late")
		for _, i := range pg.Status.Instances {
			return i.Message
		}
		return ""
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(ContainSubstring("the recovery target is after the end of the archive"), "a target after the archive's end, saying why")
	g.Expect(pgCondition(env.postgresCluster(g, ns, "too-late"), v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionFalse), "never promoted short of its target")

	// Each restore held its base backup against the source's retention
	// while it recovered, and let it go once it had; the one replaying
	// towards a target after the archive's end holds it still.
	g.Eventually(func(g Gomega) []string {
		holds, err := archive.ListHolds(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		var holders []string
		for _, h := range holds {
			holders = append(holders, h.Holder)
		}
		return holders
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ConsistOf(ns+"/too-late"), "the holds of the restores in the source's store")
}

// restoreWithPlugin makes cluster name, restored from source's store at
// target, from the manifest kubectl platform pg restore prints; it refuses
// tooEarly, before the source's first recoverability point, first. The
// manifest is the source's spec but its bootstrap: the test makes it one
// instance without archiving, as the other restores, before creating it.
func (e *environment) restoreWithPlugin(t *testing.T, ns, source, name string, target, tooEarly time.Time) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) *metav1.Time {
		a := e.postgresCluster(g, ns, source).Status.Archiving
		g.Expect(a).NotTo(BeNil())
		return a.FirstRecoverabilityPoint
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).ShouldNot(BeNil(), "status.archiving.firstRecoverabilityPoint")
	out, err := e.kubectlPlatform(t, "pg", "restore", source, name, "--to-time", tooEarly.UTC().Format(time.RFC3339), "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("the first recoverability point of " + source))

	out = e.mustPlatform(t, "pg", "restore", source, name, "--to-time", target.UTC().Format(time.RFC3339), "-n", ns)
	var manifest []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "warning: ") {
			manifest = append(manifest, line)
		}
	}
	pg := &v1alpha1.PostgresCluster{}
	g.Expect(yaml.UnmarshalStrict([]byte(strings.Join(manifest, "\n")), pg)).To(Succeed())
	g.Expect(pg.Name).To(Equal(name))
	g.Expect(pg.Namespace).To(Equal(ns))
	from := pg.Spec.Bootstrap.FromBackup
	g.Expect(from.ObjectStore.Path).To(Equal(ns + "/" + source))
	g.Expect(from.TargetTime.Time.Equal(target)).To(BeTrue(), "targetTime %s", from.TargetTime)
	pg.Spec.Instances, pg.Spec.Synchronous, pg.Spec.Backup = 1, 0, nil
	g.Expect(e.Client.Create(t.Context(), pg)).To(Succeed())
}

// superuserExec runs sql as the superuser postgres (spec.superuserAccess)
// through CLUSTER-rw, with the password of Secret CLUSTER-superuser.
func (e *environment) superuserExec(t *testing.T, ns, cluster, sql string) {
	t.Helper()
	g := NewWithT(t)
	secret := &corev1.Secret{}
	g.Expect(e.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: cluster + "-superuser"}, secret)).To(Succeed())
	host, port := e.serviceAddress(g, ns, cluster+"-rw")
	conn, err := postgres.Connect(t.Context(), postgres.ConnInfo{Host: host, Port: port, User: "postgres", Password: string(secret.Data["password"]), DBName: "postgres"})
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), sql)
	g.Expect(err).NotTo(HaveOccurred(), sql)
}
