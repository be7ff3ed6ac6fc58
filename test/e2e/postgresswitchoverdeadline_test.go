package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	"example.com/platform-operator/api/v1alpha1"
)

// Issue 49, point 7: a switchover has a deadline. The primary hands over
// cleanly and stops taking writes; a target that never takes the lease
// (here its instance manager hangs, its PostgreSQL streaming on) would
// leave the cluster without a primary for as long as it hangs. Past the
// deadline the switchover is given up and the former primary starts
// again; and while spec.primary still names the target that failed, the
// operator does not try it again at once, which would stop writes for
// another deadline, and another: it says so in the status.
func TestPostgresClusterSwitchoverDeadline(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	pg, password, w := env.startWrittenCluster(t, ns, "so", 2, 1, nil)
	primary := pg.Status.CurrentPrimary
	target := otherThan("so", primary)

	t.Logf("The instance manager of %s hangs; a switchover to it is asked for", target)
	g.Expect(env.Cluster.PauseInstanceManager(ns, target)).To(Succeed())
	t.Cleanup(func() { _ = env.Cluster.ResumeInstanceManager(ns, target) })
	env.patchPostgresCluster(t, ns, "so", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Primary = target })
	asked := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "so").Status.Phase).To(Equal(v1alpha1.PostgresSwitchingOver))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "so")
		g.Expect(pg.Status.CurrentPrimary).To(Equal(primary))
		g.Expect(pg.Status.TargetPrimary).To(Equal(primary))
		g.Expect(pg.Status.Phase).NotTo(Equal(v1alpha1.PostgresSwitchingOver))
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	w.resumes(g, 5, time.Minute)
	t.Logf("Given up, %s the primary again and writing %s after the switchover was asked for", primary, time.Since(asked).Round(time.Second))
	g.Expect(eventsAbout(g, t.Context(), env, "PostgresCluster", ns, "so")).To(HaveKey("SwitchoverAbandoned"))

	// A retry now would stop writes for another deadline: longer than
	// one, the primary stays and the writer commits throughout.
	var said string
	g.Consistently(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "so")
		g.Expect(pg.Status.TargetPrimary).To(Equal(primary), "the switchover to %s tried again", target)
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition); c != nil {
			said = c.Message
		}
	}).WithTimeout(75 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("The status says: %q", said)
	g.Expect(said).To(ContainSubstring(target))
	w.resumes(g, 5, time.Minute)

	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "so", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
}
