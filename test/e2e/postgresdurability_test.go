package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/api/v1alpha1"
)

// Issue 49, point 7: two instances, synchronous: 1, the replica fenced (as
// for a cold snapshot). With dataDurability required, the default, commits
// wait for it: the writer commits nothing. Switched to preferred, commits
// go on without it; unfenced, it streams again and confirms them again.
// Every acknowledged row is there at the end.
func TestPostgresClusterDataDurability(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	pg, password, w := env.startWrittenCluster(t, ns, "dur", 2, 1, nil)
	g.Expect(pg.Spec.DataDurability).To(Equal(v1alpha1.DurabilityRequired), "the default")
	replica := otherThan("dur", pg.Status.CurrentPrimary)

	env.patchPostgresCluster(t, ns, "dur", func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = []string{replica} })
	g.Eventually(func(g Gomega) {
		i := instanceStatus(env.postgresCluster(g, ns, "dur"), replica)
		g.Expect(i).NotTo(BeNil())
		g.Expect(i.Fenced).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	time.Sleep(time.Second)
	stalled := w.committed.Load()
	g.Consistently(w.committed.Load).WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).Should(Equal(stalled),
		"required: no commit returns while the only synchronous standby is fenced")

	env.patchPostgresCluster(t, ns, "dur", func(pg *v1alpha1.PostgresCluster) { pg.Spec.DataDurability = v1alpha1.DurabilityPreferred })
	w.resumes(g, 20, time.Minute)
	t.Logf("preferred: commits went on with the replica fenced")

	env.patchPostgresCluster(t, ns, "dur", func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = nil })
	env.waitPostgresReady(t, ns, "dur", 2)
	w.resumes(g, 10, time.Minute)
	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "dur", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
}
