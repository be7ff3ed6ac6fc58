package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/api/v1alpha1"
)

// Issue 49, point 2: the primary cut off from the API server alone, its
// network to the standbys intact. It cannot renew its lease, but every
// standby still streams from it, so it does not fence itself (an API server
// outage must not stop the database). Once the lease lapses the operator
// elects another: the standbys detach from the former primary before they
// report, so it can neither have a commit confirmed nor keep its exemption,
// and fences itself; a standby is promoted. Every acknowledged commit is
// kept, never two instances accept writes, and once it reaches the API
// server again the former primary rejoins as a replica.
func TestPostgresClusterPrimaryCutOffFromTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "api", 3, 1, nil)
	pg := env.waitPostgresReady(t, ns, "api", 3)
	former := pg.Status.CurrentPrimary
	password := env.appSecret(g, ns, "api")["password"]
	env.createWritesTable(t, ns, "api", password)
	stopWatch := env.watchPrimaries(t, ns, "api", 3, password)
	w := env.startWriter(t, ns, "api", password)
	w.resumes(g, 10, time.Minute)

	g.Expect(env.Cluster.CutOffPostgresFromAPIServer(ns, former)).To(Succeed())
	cut := time.Now()
	t.Cleanup(func() { _ = env.Cluster.ReconnectPostgresToAPIServer(ns, former) })
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "api")
		g.Expect(pg.Status.CurrentPrimary).NotTo(BeElementOf(former, ""))
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy), "%+v", pg.Status)
		promoted = pg.Status.CurrentPrimary
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	w.resumes(g, 1, time.Minute)
	t.Logf("%s promoted %s after %s was cut off from the API server", promoted, time.Since(cut).Round(100*time.Millisecond), former)

	g.Expect(env.Cluster.ReconnectPostgresToAPIServer(ns, former)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "api")
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		for _, i := range pg.Status.Instances {
			if i.Name == former {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
			}
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "api", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
}
