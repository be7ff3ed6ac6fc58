package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/api/v1alpha1"
)

// primaryFault is a fault of a PostgresCluster's primary that a failover
// must answer, and how it heals.
type primaryFault struct {
	name          string
	inject, heal  func(ns, pod string) error
	instances     int32
	synchronous   int32
	promotedUnder time.Duration
}

// replacesPrimary runs a cluster under a writer, injects the fault into its
// primary, and checks what a failover must give: another instance promoted
// and the cluster Healthy within f.promotedUnder, the writer going on, the
// former primary back as a replica once healed, every acknowledged row
// kept, and never two instances accepting writes.
func (e *environment) replacesPrimary(t *testing.T, ns, cluster string, f primaryFault) {
	t.Helper()
	g := NewWithT(t)
	e.newPostgresCluster(t, ns, cluster, f.instances, f.synchronous, nil)
	pg := e.waitPostgresReady(t, ns, cluster, int(f.instances))
	former := pg.Status.CurrentPrimary
	password := e.appSecret(g, ns, cluster)["password"]
	e.createWritesTable(t, ns, cluster, password)
	stopWatch := e.watchPrimaries(t, ns, cluster, int(f.instances))
	w := e.startWriter(t, ns, cluster, password)
	w.resumes(g, 10, time.Minute)

	g.Expect(f.inject(ns, former)).To(Succeed())
	injected := time.Now()
	t.Cleanup(func() { _ = f.heal(ns, former) })
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := e.postgresCluster(g, ns, cluster)
		g.Expect(pg.Status.CurrentPrimary).NotTo(BeElementOf(former, ""))
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy), "%+v", pg.Status)
		promoted = pg.Status.CurrentPrimary
	}).WithTimeout(f.promotedUnder).WithPolling(200 * time.Millisecond).Should(Succeed())
	w.resumes(g, 1, time.Minute)
	t.Logf("%s promoted %s after %s: %s", promoted, time.Since(injected).Round(100*time.Millisecond), f.name, former)

	g.Expect(f.heal(ns, former)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := e.postgresCluster(g, ns, cluster)
		g.Expect(pg.Status.ReadyInstances).To(Equal(fmt.Sprintf("%d/%d", f.instances, f.instances)))
		for _, i := range pg.Status.Instances {
			if i.Name == former {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
			}
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	ids := w.halt()
	g.Expect(e.missingRows(t, ns, cluster, password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
}
