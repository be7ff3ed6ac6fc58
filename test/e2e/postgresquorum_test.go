package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// Issue 49, point 1: with synchronous: 1 over two standbys, a commit is
// acknowledged once either standby has it. One standby lags (cut off from
// the network: a paused one would find what it missed in its socket's
// buffer), so every commit meanwhile is acknowledged by the other alone;
// then the primary and that other standby are lost together (cut off and
// deleted at once, as when they shared a node that failed). The lagging
// standby alone cannot know what it lacks: the failover waits until enough
// standbys report (here both), and every acknowledged commit is still
// there, through CLUSTER-rw, with never two primaries.
func TestPostgresClusterFailoverWaitsForAQuorum(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "q", 3, 1, nil)
	pg := env.waitPostgresReady(t, ns, "q", 3)
	g.Expect(pg.Status.CurrentPrimary).To(Equal("q-1"))
	password := env.appSecret(g, ns, "q")["password"]
	env.createWritesTable(t, ns, "q", password)
	stopWatch := env.watchPrimaries(t, ns, "q", 3)
	w := env.startWriter(t, ns, "q", password)
	w.resumes(g, 10, time.Minute)

	t.Log("q-3 lags: cut off; commits go on, acknowledged by q-2 alone")
	g.Expect(env.Cluster.CutOffPostgres(ns, "q-3")).To(Succeed())
	t.Cleanup(func() { _ = env.Cluster.ReconnectPostgres(ns, "q-3") })
	lagFrom := w.committed.Load()
	w.resumes(g, 40, time.Minute)

	t.Log("The primary q-1 and the standby q-2 lost together, as with their node: cut off, then their pods deleted; q-3 reconnected")
	for _, name := range []string{"q-1", "q-2"} {
		// Cut off first: a pod deleted while its network works would stop
		// cleanly and hand its last WAL to q-3.
		g.Expect(env.Cluster.CutOffPostgres(ns, name)).To(Succeed())
	}
	for _, name := range []string{"q-1", "q-2"} {
		g.Expect(env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			client.GracePeriodSeconds(1))).To(Succeed())
	}
	lost := time.Now()
	g.Expect(env.Cluster.ReconnectPostgres(ns, "q-3")).To(Succeed())

	var waitedFor string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "q")
		if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition); c != nil && c.Reason == v1alpha1.PostgresWaitingForQuorumReason {
			waitedFor = c.Message
		}
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy), "%+v", pg.Status)
		g.Expect(pg.Status.CurrentPrimary).NotTo(BeEmpty())
	}).WithTimeout(pgTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	w.resumes(g, 1, time.Minute)
	pg = env.postgresCluster(g, ns, "q")
	t.Logf("%s is the primary %s after the loss; while short of a quorum the status said: %q",
		pg.Status.CurrentPrimary, time.Since(lost).Round(100*time.Millisecond), waitedFor)

	ids := w.halt()
	g.Expect(len(ids)).To(BeNumerically(">", lagFrom+40))
	g.Expect(env.missingRows(t, ns, "q", password, ids)).To(BeZero(), "rows whose commit returned, of %d, %d of them while q-3 lagged", len(ids), len(ids)-int(lagFrom))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
}
