package instance_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// A PostgresCluster deleted with its claims kept (deletionPolicy Retain)
// and made again under its name starts from the most advanced data those
// claims hold: here the last primary's, which alone has the rows written
// while the first instance was down. Starting from the first instance, as
// a new cluster does, would lose those rows and leave the others on a
// history that forked from it.
func TestClusterMadeAgainOverKeptClaims(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := "kept"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	newCluster := func() *v1alpha1.PostgresCluster {
		return &v1alpha1.PostgresCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Spec: v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1, Image: "postgres:15",
				Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
		}
	}
	pg := newCluster()
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	f := newFleet(t, ns, "db", 3)
	for _, name := range []string{"db-1", "db-2", "db-3"} {
		f.start(name)
	}
	stopWatch := watchPrimaries(f)
	healthyWith := func(primary string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			pg := getCluster(g, ns, "db")
			g.Expect(pg.Status.CurrentPrimary).To(Equal(primary))
			g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	healthyWith("db-1")
	insert := func(primary, password string, from, to int) {
		t.Helper()
		conn, err := f.connect(ctx, primary, password)
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(ctx)
		for id := from; id <= to; id++ {
			_, err := conn.Exec(ctx, "INSERT INTO rows (id) VALUES ($1)", id)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	password := appPassword(g, ns, "db")
	conn, err := f.connect(ctx, "db-1", password)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.Exec(ctx, "CREATE TABLE rows (id bigint PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close(ctx)
	insert("db-1", password, 1, 10)

	t.Log("db-2 becomes the primary; then db-1 stops, and rows are written without it (db-3 is the synchronous standby)")
	pg = getCluster(g, ns, "db")
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Primary = "db-2"
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	healthyWith("db-2")
	f.stop("db-1")
	insert("db-2", password, 11, 30)
	f.stop("db-2")
	f.stop("db-3")

	t.Log("The cluster is deleted, its claims kept, and made again")
	oldUID := pg.UID
	g.Expect(suite.Client.Delete(ctx, pg)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(suite.Client.Get(ctx, client.ObjectKeyFromObject(pg), &v1alpha1.PostgresCluster{}))
	}).WithTimeout(time.Minute).Should(BeTrue())
	g.Expect(suite.CollectGarbage(ctx, ns, oldUID)).To(Succeed())
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(suite.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
	g.Expect(claims.Items).To(HaveLen(3), "the claims kept")
	// Claims older than the cluster by their creation timestamps, which
	// count whole seconds.
	time.Sleep(time.Second)
	// Taking an earlier cluster's claims is asked for explicitly.
	again := newCluster()
	again.Annotations = map[string]string{v1alpha1.PostgresAdoptKeptClaimsAnnotation: "db"}
	g.Expect(suite.Client.Create(ctx, again)).To(Succeed())
	for _, name := range []string{"db-1", "db-2", "db-3"} {
		f.start(name)
	}
	healthyWith("db-2")

	password = appPassword(g, ns, "db")
	g.Eventually(func(g Gomega) {
		conn, err := f.connect(ctx, "db-2", password)
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(ctx)
		var rows int
		g.Expect(conn.QueryRow(ctx, "SELECT count(*) FROM rows").Scan(&rows)).To(Succeed())
		g.Expect(rows).To(Equal(30), "rows kept of 30 committed")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Expect(stopWatch()).To(BeEmpty(), "moments with two primaries")
}
