package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Issue 49, point 7: one slow health read must not fail over a healthy
// primary. The primary's PostgreSQL stalls (paused) for 3 s, longer than
// the instance manager's 2 s read of its state: writes wait, then go on, on
// the same primary and the same timeline, with no election.
func TestPostgresClusterPrimaryStallIsNoFailover(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	pg, password, w := env.startWrittenCluster(t, ns, "stall", 2, 1, nil)
	primary, epoch := pg.Status.CurrentPrimary, pg.Status.PromotionEpoch

	g.Expect(env.Cluster.PausePostgres(ns, primary)).To(Succeed())
	t.Cleanup(func() { _ = env.Cluster.ResumePostgres(ns, primary) })
	time.Sleep(3 * time.Second)
	g.Expect(env.Cluster.ResumePostgres(ns, primary)).To(Succeed())
	w.resumes(g, 20, time.Minute)

	// Long enough for a failover the stall had started to show.
	g.Consistently(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "stall")
		g.Expect(pg.Status.CurrentPrimary).To(Equal(primary))
		g.Expect(pg.Status.TargetPrimary).To(Equal(primary))
		g.Expect(pg.Status.PromotionEpoch).To(Equal(epoch), "no election")
	}).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "stall", password, ids)).To(BeZero())
}
