package e2e

import (
	"strconv"
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

// A whole cluster lost (frozen, then its pods and claims deleted) under a
// steady writer
// comes back from the object store alone with every acknowledged commit
// whose WAL the store holds; what is lost is at most what the last,
// unarchived WAL file held, which archiveTimeout bounds.
func TestPostgresClusterRestoreAfterLoss(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "rpo", "db")
	const archiveTimeout = 10 * time.Second
	env.newPostgresCluster(t, ns, "db", 2, 1, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: store, ArchiveTimeout: &metav1.Duration{Duration: archiveTimeout}}
		pg.Spec.DeletionPolicy = v1alpha1.DeleteClaims
		pg.Annotations = map[string]string{v1alpha1.PostgresConfirmDeleteAnnotation: "db"}
	})
	env.waitPostgresReady(t, ns, "db", 2)
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	password := env.appSecret(g, ns, "db")["password"]
	env.createWritesTable(t, ns, "db", password)
	env.newStoreBackupJob(t, ns, "db")
	g.Eventually(func(g Gomega) int {
		backups, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		return len(backups)
	}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(Equal(1), "a base backup in the store")

	w := env.startWriterWith(t, ns, "db", password, true)
	w.resumes(g, 400, 2*time.Minute)

	// The whole cluster goes at once, as with its nodes and volumes: its
	// processes freeze (nothing shuts down cleanly, nothing more is
	// archived), then its pods and claims are deleted.
	for _, instance := range []string{"db-1", "db-2"} {
		g.Expect(env.Cluster.PauseInstanceManager(ns, instance)).To(Succeed())
		g.Expect(env.Cluster.PausePostgres(ns, instance)).To(Succeed())
	}
	pg := env.postgresCluster(g, ns, "db")
	g.Expect(env.Client.Delete(t.Context(), pg)).To(Succeed())
	lost := time.Now()
	g.Eventually(func(g Gomega) []corev1.PersistentVolumeClaim {
		claims := &corev1.PersistentVolumeClaimList{}
		g.Expect(env.Client.List(t.Context(), claims, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "db"})).To(Succeed())
		return claims.Items
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(BeEmpty(), "the claims deleted")
	acked := w.halt()

	names, err := archive.ArchivedWAL(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	last := ""
	for _, n := range names {
		if objectstore.IsSegment(n) && n[8:] > lastOrEmpty(last) {
			last = n
		}
	}
	g.Expect(last).NotTo(BeEmpty())
	logNo, _ := strconv.ParseUint(last[8:16], 16, 32)
	segNo, _ := strconv.ParseUint(last[16:24], 16, 32)
	archivedEnd := postgres.LSN((logNo<<32 | segNo<<24) + 16<<20)

	env.newPostgresCluster(t, ns, "back", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		source := store
		source.Path = ns + "/db"
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{ObjectStore: &source}}
	})
	env.waitPostgresReady(t, ns, "back", 1)
	var inArchive, after []int64
	for _, id := range acked {
		if lsn, ok := w.afterCommit[id]; ok && lsn <= archivedEnd {
			inArchive = append(inArchive, id)
		} else {
			after = append(after, id)
		}
	}
	back := env.appSecret(g, ns, "back")["password"]
	g.Expect(env.missingRows(t, ns, "back", back, inArchive)).To(BeZero(),
		"acknowledged rows whose commit the archive holds (WAL up to %s, segment %s), of %d", archivedEnd, last, len(inArchive))
	lostRows := env.missingRows(t, ns, "back", back, after)
	t.Logf("%d rows acknowledged; %d in the archive's WAL (up to %s), all restored; %d after it, of which %d lost "+
		"(the writer commits about 20 a second: about %.1f s of commits, archiveTimeout %s); the store was read %s after the loss",
		len(acked), len(inArchive), archivedEnd, len(after), lostRows, float64(lostRows)/20, archiveTimeout, time.Since(lost).Round(time.Second))
}

// lastOrEmpty is the log-and-segment part of a segment name, "" for none.
func lastOrEmpty(name string) string {
	if name == "" {
		return ""
	}
	return name[8:]
}
