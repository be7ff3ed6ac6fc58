package e2e

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
)

// Archive continuity across a failover and a switchover, under a writer:
// the primary's pod deleted (timeline 2), then a switchover back (timeline
// 3). The archive then holds the history files of timelines 2 and 3 and
// every segment a recovery along timeline 3's history reads, from the
// first archived to the last; and a cluster restored from the store alone,
// replaying all of it from a base backup taken on timeline 1, has every row
// whose commit returned before the last WAL switch.
func TestPostgresClusterArchiveContinuousAcrossFailover(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "continuity", "db")
	_, password, w := env.startWrittenCluster(t, ns, "db", 2, 1, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = archivingTo(store)
		pg.Spec.SuperuserAccess = true
		pg.Spec.FailoverDelay = 5
	})
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	env.newStoreBackupJob(t, ns, "db")
	g.Eventually(func(g Gomega) []objectstore.BackupInfo {
		backups, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		return backups
	}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(HaveLen(1), "a base backup on timeline 1")
	w.resumes(g, 20, time.Minute)

	first := env.postgresCluster(g, ns, "db").Status.CurrentPrimary
	t.Logf("Failover: the primary %s's pod deleted under the writer", first)
	g.Expect(env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first}},
		client.GracePeriodSeconds(1))).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).NotTo(Or(BeEmpty(), Equal(first)))
		g.Expect(pg.Status.ReadyInstances).To(Equal("2/2"))
		for _, i := range pg.Status.Instances {
			g.Expect(i.Timeline).To(BeNumerically(">=", 2), "%s on the new timeline", i.Name)
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 20, time.Minute)

	t.Logf("Switchover back to %s under the writer", first)
	env.patchPostgresCluster(t, ns, "db", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Primary = first })
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal(first))
		g.Expect(pgCondition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 20, time.Minute)
	ids := w.halt()

	// Everything committed is in a segment that is switched out and
	// archived.
	conn := env.connectWhenRouted(t, ns, "db-rw", password)
	var segment string
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&segment)).To(Succeed())
	_ = conn.Close(t.Context())
	env.superuserExec(t, ns, "db", "SELECT pg_switch_wal()")
	var names []string
	var histories objectstore.Histories
	g.Eventually(func(g Gomega) {
		var err error
		names, err = archive.ArchivedWAL(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names).To(ContainElement(segment), "the segment of the last commit archived")
		histories, err = archive.ReadHistories(t.Context(), func(s string) (uint64, error) {
			lsn, err := postgres.ParseLSN(s)
			return uint64(lsn), err
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(histories).To(And(HaveKey(uint32(2)), HaveKey(uint32(3))), "the history files of both new timelines")
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	var segments []string
	for _, n := range names {
		if objectstore.IsSegment(n) {
			segments = append(segments, n)
		}
	}
	t.Logf("archive: %d segments from %s to %s; 00000003.history: %v", len(segments), segments[0], segments[len(segments)-1], histories[3])
	g.Expect(objectstore.ContinuityBreaks(names, histories, 16<<20)).To(BeEmpty(), "the archive: %s", strings.Join(names, " "))

	// The proof: a restore from the store alone replays all of it.
	env.newPostgresCluster(t, ns, "restored", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		source := store
		source.Path = ns + "/db"
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{ObjectStore: &source}}
	})
	env.waitPostgresReady(t, ns, "restored", 1)
	restoredPassword := env.appSecret(g, ns, "restored")["password"]
	g.Expect(env.missingRows(t, ns, "restored", restoredPassword, ids)).To(BeZero(), "rows committed across both timeline switches, of %d", len(ids))
	t.Logf("%d rows committed across a failover and a switchover, all restored from the archive", len(ids))
}
