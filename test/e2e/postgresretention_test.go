package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
)

// Retention end to end: a cluster with a recovery window of one minute,
// under a writer, takes three base backups into the store. Once all three
// are older than the window, its primary deletes the two older ones and the
// WAL only they need (every segment before the newest backup's start), and
// never the newest backup nor any WAL after its start: the archive from
// there on is whole, and the status counts one backup. While a restore
// holds the second backup (its hold in the store, as a restoring cluster
// takes one), only the first goes, with the WAL before the second's start;
// the second goes once the hold is let go.
func TestPostgresClusterRetentionInTheStore(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "retention", "db")
	_, _, w := env.startWrittenCluster(t, ns, "db", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: store, ArchiveTimeout: &metav1.Duration{Duration: 10 * time.Second}, Retention: "1m"}
	})
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	bj := env.newStoreBackupJob(t, ns, "db")
	var backups []objectstore.BackupInfo
	for i, runNow := range []string{"first", "second", "third"} {
		if i > 0 {
			// Apart by more than archive_timeout: each backup starts in
			// a later segment.
			w.resumes(g, 10, time.Minute)
			time.Sleep(12 * time.Second)
			g.Eventually(func() error {
				current := &v1alpha1.BackupJob{}
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(bj), current); err != nil {
					return err
				}
				current.Spec.RunNow = runNow
				return env.Client.Update(t.Context(), current)
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
		g.Eventually(func(g Gomega) []objectstore.BackupInfo {
			var err error
			backups, err = archive.ListBaseBackups(t.Context())
			g.Expect(err).NotTo(HaveOccurred())
			return backups
		}).WithTimeout(pgBackupTimeout).WithPolling(time.Second).Should(HaveLen(i+1), "base backup %d in the store", i+1)
	}
	newest := backups[len(backups)-1]
	lsnOf := func(s string) (uint64, error) {
		lsn, err := postgres.ParseLSN(s)
		return uint64(lsn), err
	}
	start, ok := objectstore.StartSegment(newest, lsnOf, 16<<20)
	g.Expect(ok).To(BeTrue())
	keptFrom := objectstore.SegmentName(uint32(newest.Timeline), start, 16<<20)
	// The position of a WAL file in the stream, whatever its timeline.
	position := func(name string) string { return name[8:24] }
	before, err := archive.ArchivedWAL(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	var oldest string
	for _, name := range before {
		if objectstore.IsSegment(name) && (oldest == "" || position(name) < position(oldest)) {
			oldest = name
		}
	}
	g.Expect(position(oldest) < position(keptFrom)).To(BeTrue(), "WAL before the newest backup, which the older ones need, is archived: from %s", oldest)
	t.Logf("three base backups; the newest %s starts in %s; the archive starts at %s", newest.ID, keptFrom, oldest)

	held := backups[1]
	hold := objectstore.Hold{Key: "restore-uid", Backup: held.ID, Holder: ns + "/restored", Until: time.Now().Add(time.Hour)}
	g.Expect(archive.PutHold(t.Context(), hold)).To(Succeed())
	heldStart, ok := objectstore.StartSegment(held, lsnOf, 16<<20)
	g.Expect(ok).To(BeTrue())
	heldFrom := objectstore.SegmentName(uint32(held.Timeline), heldStart, 16<<20)
	// The primary's catalog pass runs every minute: the window is over a
	// minute after the newest backup ended, the pass within a minute more.
	g.Eventually(func(g Gomega) {
		left, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(left).To(ConsistOf(HaveField("ID", held.ID), HaveField("ID", newest.ID)), "the held backup and the newest are left")
		wal, err := archive.ArchivedWAL(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(wal).To(ContainElement(heldFrom), "the held backup's first segment is kept")
		for _, name := range wal {
			if objectstore.IsSegment(name) {
				g.Expect(position(name) >= position(heldFrom)).To(BeTrue(), "WAL only the first backup needed is gone: %s", name)
			}
		}
	}).WithTimeout(4 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	g.Expect(archive.DeleteHold(t.Context(), hold.Key)).To(Succeed())
	g.Eventually(func(g Gomega) {
		left, err := archive.ListBaseBackups(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(left).To(ConsistOf(HaveField("ID", newest.ID)), "only the newest backup is left")
		wal, err := archive.ArchivedWAL(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		for _, name := range wal {
			if objectstore.IsSegment(name) {
				g.Expect(position(name) >= position(keptFrom)).To(BeTrue(), "WAL only the deleted backups needed is gone: %s", name)
			}
		}
	}).WithTimeout(4 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	w.halt()

	wal, err := archive.ArchivedWAL(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wal).To(ContainElement(keptFrom), "the newest backup's first segment is kept")
	histories, err := archive.ReadHistories(t.Context(), lsnOf)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objectstore.ContinuityBreaks(wal, histories, 16<<20)).To(BeEmpty(), "the WAL after the newest backup is whole")
	g.Eventually(func(g Gomega) int32 {
		return env.postgresCluster(g, ns, "db").Status.Archiving.BaseBackups
	}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(BeEquivalentTo(1), "the status counts what the store holds")
	t.Logf("retention left %s and %d WAL files from %s on", newest.ID, len(wal), keptFrom)
}
