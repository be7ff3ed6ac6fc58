package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
)

// Issue 49, point 3: with synchronous: 0 nothing waits for the standby, so
// a standby cut off from its primary falls behind without bound. When the
// primary is then lost, that standby is the only candidate; promoting it
// would drop everything it never received. spec.maxLagOnFailover bounds
// that loss: the standby is further behind the primary's last reported
// position than the bound, so the cluster waits, Degraded
// ReplicasTooFarBehind, and the primary takes its place again once it is
// back, with every acknowledged commit.
func TestPostgresClusterMaxLagOnFailover(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	pg, password, w := env.startWrittenCluster(t, ns, "lag", 2, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.MaxLagOnFailover = ptr.To(resource.MustParse("1Mi"))
	})
	primary := pg.Status.CurrentPrimary
	standby := otherThan("lag", primary)

	t.Logf("The standby %s cut off; the primary %s writes on, more than the bound ahead of it", standby, primary)
	g.Expect(env.Cluster.CutOffPostgres(ns, standby)).To(Succeed())
	t.Cleanup(func() { _ = env.Cluster.ReconnectPostgres(ns, standby) })
	conn := env.connectWhenRouted(t, ns, "lag-rw", password)
	_, err := conn.Exec(t.Context(), "CREATE TABLE filler AS SELECT repeat('x', 1000) AS pad FROM generate_series(1, 4000)")
	g.Expect(err).NotTo(HaveOccurred())
	var ahead string
	g.Expect(conn.QueryRow(t.Context(), "SELECT pg_current_wal_lsn()::text").Scan(&ahead)).To(Succeed())
	conn.Close(t.Context())
	w.resumes(g, 10, time.Minute)
	aheadLSN, err := postgres.ParseLSN(ahead)
	g.Expect(err).NotTo(HaveOccurred())
	// The operator must know how far the primary got: the bound is
	// measured from the position the primary last reported.
	g.Eventually(func(g Gomega) {
		last, err := postgres.ParseLSN(env.postgresCluster(g, ns, "lag").Status.LastPrimaryLSN)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last).To(BeNumerically(">=", aheadLSN))
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Logf("The primary %s cut off too, then %s reconnected: it is the only candidate", primary, standby)
	g.Expect(env.Cluster.CutOffPostgres(ns, primary)).To(Succeed())
	t.Cleanup(func() { _ = env.Cluster.ReconnectPostgres(ns, primary) })
	ids := w.acknowledged()
	g.Expect(env.Cluster.ReconnectPostgres(ns, standby)).To(Succeed())

	// The primary's lease lapses and an election begins (no target while
	// it runs); the standby, too far behind, must never be its target.
	var waiting string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "lag")
		g.Expect(pg.Status.TargetPrimary).NotTo(Equal(standby), "%s chosen, more than maxLagOnFailover behind", standby)
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresReplicasTooFarBehindReason), "%+v", pg.Status)
		waiting = c.Message
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("The cluster waits: %q", waiting)
	g.Consistently(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "lag").Status.TargetPrimary).NotTo(Equal(standby))
	}).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.Logf("The primary %s back: it takes its place again", primary)
	g.Expect(env.Cluster.ReconnectPostgres(ns, primary)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "lag")
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy), "%+v", pg.Status)
		g.Expect(pg.Status.CurrentPrimary).To(Equal(primary))
	}).WithTimeout(pgTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	w.resumes(g, 5, time.Minute)
	w.halt()
	g.Expect(env.missingRows(t, ns, "lag", password, ids)).To(BeZero(), "rows acknowledged before the primary was cut off, of %d", len(ids))
}
