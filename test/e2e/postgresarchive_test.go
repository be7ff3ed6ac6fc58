package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/objectstore"
)

// storeSecret is the Secret of the object store's keys in ns.
const storeSecret = "object-store"

// archivingTo is a spec.backup that archives to store, with an
// archive_timeout short enough for a test to wait for a switched segment.
func archivingTo(store v1alpha1.PostgresObjectStore) *v1alpha1.PostgresBackupSpec {
	return &v1alpha1.PostgresBackupSpec{ObjectStore: store, ArchiveTimeout: &metav1.Duration{Duration: 10 * time.Second}}
}

// newStoreBackupJob is the BackupJob to-store of cluster: base backups
// into the cluster's object store, run by runNow.
func (e *environment) newStoreBackupJob(t *testing.T, ns, cluster string, change ...func(*v1alpha1.BackupJob)) *v1alpha1.BackupJob {
	t.Helper()
	return e.newPostgresBackupJobTo(t, ns, "to-store", cluster, false, &v1alpha1.BackupTarget{ObjectStore: &v1alpha1.BackupObjectStoreTarget{}}, change...)
}

// objectStoreOf gives a test the PostgreSQL cluster's object store: the
// Secret of its keys in ns, the spec that archives to bucket, and a client
// of the cluster's path in it, as the test reads the archive.
func (e *environment) objectStoreOf(t *testing.T, ns, bucket, cluster string) (v1alpha1.PostgresObjectStore, *objectstore.Client) {
	t.Helper()
	store, ok := e.Cluster.ObjectStore()
	if !ok {
		if os.Getenv(localcluster.ObjectStoreBinDirEnv) == "" {
			t.Skipf("%s is not set: make test builds SeaweedFS and sets it", localcluster.ObjectStoreBinDirEnv)
		}
		t.Fatal("the PostgreSQL cluster runs no object store")
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: storeSecret, Namespace: ns},
		StringData: map[string]string{v1alpha1.ObjectStoreAccessKeyIDKey: store.AccessKeyID, v1alpha1.ObjectStoreSecretAccessKeyKey: store.SecretAccessKey},
	}
	if err := e.Client.Create(t.Context(), secret); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	// The pods reach the store by its name, as a manifest gives it.
	spec := v1alpha1.PostgresObjectStore{Endpoint: localcluster.PodObjectStoreEndpoint, Bucket: bucket, CredentialsSecret: storeSecret}
	client, err := objectstore.New(objectstore.Location{Endpoint: store.Endpoint, Bucket: bucket, Prefix: ns + "/" + cluster, Region: store.Region,
		AccessKeyID: store.AccessKeyID, SecretAccessKey: store.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	return spec, client
}

// archiving waits until the cluster's ContinuousArchiving condition has
// status and reason, and returns the cluster.
func (e *environment) archiving(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string, within time.Duration) *v1alpha1.PostgresCluster {
	t.Helper()
	var pg *v1alpha1.PostgresCluster
	NewWithT(t).Eventually(func(g Gomega) {
		pg = e.postgresCluster(g, ns, name)
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresContinuousArchivingCondition)
		g.Expect(c).NotTo(BeNil(), "ContinuousArchiving")
		g.Expect(c.Status).To(Equal(status), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}).WithTimeout(within).WithPolling(time.Second).Should(Succeed())
	return pg
}

// archiveGaps are the WAL segments missing from names, per timeline,
// between the first and the last segment archived on it; and the
// timelines whose first segment is not where the one before it ended
// (the segment of the switch, which both share by name but for the
// timeline). Segments are 16 MB, 256 to a log file.
func archiveGaps(names []string) []string {
	byTimeline := map[uint64][]uint64{}
	for _, n := range names {
		if !objectstore.IsSegment(n) {
			continue
		}
		tl, _ := strconv.ParseUint(n[:8], 16, 32)
		log, _ := strconv.ParseUint(n[8:16], 16, 32)
		seg, _ := strconv.ParseUint(n[16:], 16, 32)
		byTimeline[tl] = append(byTimeline[tl], log*256+seg)
	}
	var timelines []uint64
	for tl := range byTimeline {
		timelines = append(timelines, tl)
	}
	sort.Slice(timelines, func(i, j int) bool { return timelines[i] < timelines[j] })
	var gaps []string
	for i, tl := range timelines {
		segs := byTimeline[tl]
		sort.Slice(segs, func(i, j int) bool { return segs[i] < segs[j] })
		for j := 1; j < len(segs); j++ {
			for missing := segs[j-1] + 1; missing < segs[j]; missing++ {
				gaps = append(gaps, fmt.Sprintf("%08X%08X%08X", tl, missing/256, missing%256))
			}
		}
		if i > 0 {
			prev := byTimeline[timelines[i-1]]
			if last := prev[len(prev)-1]; segs[0] > last+1 {
				gaps = append(gaps, fmt.Sprintf("timeline %d starts at segment %d, timeline %d ended at %d", tl, segs[0], timelines[i-1], last))
			}
		}
	}
	return gaps
}

// A cluster with spec.backup archives every WAL file to the object store
// and says so; with the store down it keeps committing, says why archiving
// fails, and catches up, with nothing missing, once the store is back; a
// switchover leaves no gap in the archive either.
func TestPostgresClusterArchivesContinuously(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	store, archive := env.objectStoreOf(t, ns, "archive", "db")
	_, _, w := env.startWrittenCluster(t, ns, "db", 2, 1, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Backup = archivingTo(store)
	})
	pg := env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, time.Minute)
	t.Logf("archiving: %+v", *pg.Status.Archiving)
	g.Eventually(func(g Gomega) []string {
		names, err := archive.ArchivedWAL(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		return names
	}).WithTimeout(time.Minute).Should(ContainElement(pg.Status.Archiving.LastArchivedWAL), "the store holds what the status says it archived")

	// The store goes away for longer than archive_timeout: commits go on,
	// WAL waits on the primary's volume, the status says why.
	g.Expect(env.Cluster.StopComponent(localcluster.ObjectStoreComponent)).To(Succeed())
	stopped := time.Now()
	pg = env.archiving(t, ns, "db", metav1.ConditionFalse, v1alpha1.PostgresArchiveFailingReason, time.Minute)
	t.Logf("archiving failing %s after the store stopped: %s", time.Since(stopped).Round(time.Second),
		meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresContinuousArchivingCondition).Message)
	g.Expect(pg.Status.Archiving.LastFailure).NotTo(BeEmpty(), "why archiving fails")
	failures := w.failures.Load()
	w.resumes(g, 40, time.Minute)
	g.Expect(w.failures.Load()).To(Equal(failures), "writes that failed while the store was down")
	g.Eventually(func(g Gomega) int64 {
		return env.postgresCluster(g, ns, "db").Status.Archiving.PendingWAL
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically(">", 0), "WAL waiting for the store")
	g.Expect(pgCondition(env.postgresCluster(g, ns, "db"), v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue), "the cluster serves")

	g.Expect(env.Cluster.StartComponent(localcluster.ObjectStoreComponent)).To(Succeed())
	env.archiving(t, ns, "db", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, 2*time.Minute)
	g.Eventually(func(g Gomega) int64 {
		return env.postgresCluster(g, ns, "db").Status.Archiving.PendingWAL
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeZero(), "the archive caught up")

	// A switchover: the new primary archives the new timeline's history
	// and goes on from where the old timeline ended.
	env.patchPostgresCluster(t, ns, "db", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Primary = "db-2" })
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal("db-2"))
		g.Expect(pgCondition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 40, time.Minute)
	w.halt()
	g.Eventually(func(g Gomega) {
		names, err := archive.ArchivedWAL(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names).To(ContainElement("00000002.history"))
		g.Expect(names).To(ContainElement(HavePrefix("00000002")), "a segment of the new timeline")
		g.Expect(archiveGaps(names)).To(BeEmpty(), "segments missing from the archive: %v", names)
	}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

	// Another cluster given the same path is refused: it never archives
	// onto this one's history.
	env.newPostgresCluster(t, ns, "intruder", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		s := store
		s.Path = ns + "/db"
		pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: s}
	})
	pg = env.archiving(t, ns, "intruder", metav1.ConditionFalse, v1alpha1.PostgresArchiveFailingReason, 2*time.Minute)
	g.Expect(pg.Status.Archiving.LastFailure).To(ContainSubstring("is the archive of PostgresCluster " + ns + "/db"))
}
