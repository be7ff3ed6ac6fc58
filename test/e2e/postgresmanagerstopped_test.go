package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/api/v1alpha1"
)

// Issue 49, point 5: the primary's instance manager stopped, not dead
// (SIGSTOP), while its PostgreSQL runs on: it renews nothing and fences
// nothing. Its watchdog, a process of its own, stops PostgreSQL before the
// lease lapses; a standby is promoted once it has. Never two instances
// accept writes, no acknowledged commit is lost, and once the manager
// continues, the former primary rejoins as a replica. With synchronous: 0
// nothing else would stop the former primary's writes.
func TestPostgresClusterPrimaryManagerStopped(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "wd", 2, 0, nil)
	pg := env.waitPostgresReady(t, ns, "wd", 2)
	former := pg.Status.CurrentPrimary
	password := env.appSecret(g, ns, "wd")["password"]
	env.createWritesTable(t, ns, "wd", password)
	stopWatch := env.watchPrimaries(t, ns, "wd", 2, password)
	w := env.startWriter(t, ns, "wd", password)
	w.resumes(g, 10, time.Minute)

	g.Expect(env.Cluster.PauseInstanceManager(ns, former)).To(Succeed())
	stopped := time.Now()
	t.Cleanup(func() { _ = env.Cluster.ResumeInstanceManager(ns, former) })
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "wd")
		g.Expect(pg.Status.CurrentPrimary).NotTo(BeElementOf(former, ""))
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy), "%+v", pg.Status)
		promoted = pg.Status.CurrentPrimary
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	w.resumes(g, 1, time.Minute)
	t.Logf("%s promoted %s after the manager of %s was stopped", promoted, time.Since(stopped).Round(100*time.Millisecond), former)

	g.Expect(env.Cluster.ResumeInstanceManager(ns, former)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "wd")
		g.Expect(pg.Status.ReadyInstances).To(Equal("2/2"))
		for _, i := range pg.Status.Instances {
			if i.Name == former {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
			}
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "wd", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
}
