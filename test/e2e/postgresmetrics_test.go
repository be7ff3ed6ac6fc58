package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/pgspec"
)

// archiveOnlyMetrics are served only once the instance tried to archive a
// WAL file (an age since something that never happened has no value): a
// cluster without an object store, as this one, never does. The instance
// package's TestCollectorReadsPostgreSQL shows them from a real archiver.
var archiveOnlyMetrics = []string{"platform_postgres_archiver_last_archived_age_seconds", "platform_postgres_archiver_last_failure_age_seconds"}

// Each instance's /metrics, on its own network namespace's address: no
// token is 401, a token not allowed to get /metrics 403, and an allowed one
// gets PostgreSQL's figures, the primary's and the replica's; every
// platform_postgres_ metric the alerts and the dashboard of
// deploy/components/monitoring read is one these scrapes return.
func TestPostgresInstanceMetrics(t *testing.T) {
	g := NewWithT(t)
	e, ns := pgNamespace(t)
	const name = "metrics"
	e.newPostgresCluster(t, ns, name, 2, 0, nil)
	pg := e.waitPostgresReady(t, ns, name, 2)
	primary := pg.Status.CurrentPrimary
	g.Expect(primary).NotTo(BeEmpty())

	urlOf := func(pod string) string {
		address, err := e.Cluster.PostgresAddress(ns, pod)
		g.Expect(err).NotTo(HaveOccurred())
		return "https://" + net.JoinHostPort(address, strconv.Itoa(pgspec.MetricsPort)) + "/metrics"
	}
	url := urlOf(primary)
	g.Expect(httpStatus(t.Context(), url, "")).To(Equal(http.StatusUnauthorized), "no token")
	g.Expect(httpStatus(t.Context(), url, "not-a-token")).To(Equal(http.StatusUnauthorized), "a token the API server does not know")
	nosy := e.serviceAccountToken(t, ns, "nosy")
	g.Expect(httpStatus(t.Context(), url, nosy)).To(Equal(http.StatusForbidden), "a token not allowed to get /metrics")

	scraper := e.serviceAccountToken(t, ns, "prometheus")
	out, err := e.Kubectl(t.Context(), "create", "clusterrolebinding", "instance-metrics-"+ns,
		"--clusterrole=platform-operator-metrics-reader", "--serviceaccount="+ns+":prometheus")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() { _, _ = e.Kubectl(t.Context(), "delete", "clusterrolebinding", "instance-metrics-"+ns) })

	served := map[string]bool{}
	bodies := map[string]string{}
	for n := 1; n <= 2; n++ {
		pod := fmt.Sprintf("%s-%d", name, n)
		g.Eventually(func(g Gomega) {
			status, body := devenv.HTTPGet(t.Context(), urlOf(pod), scraper)
			g.Expect(status).To(Equal(http.StatusOK), body)
			g.Expect(body).To(ContainSubstring("platform_postgres_up 1"))
			if pod != primary {
				// Streaming once the replica caught up.
				g.Expect(body).To(ContainSubstring("platform_postgres_replica_streaming 1"))
			} else {
				g.Expect(body).To(ContainSubstring(fmt.Sprintf(`platform_postgres_standby_sync_state{standby=%q,state="async"} 1`, name+"-"+strconv.Itoa(3-n))))
			}
			bodies[pod] = body
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		for _, line := range strings.Split(bodies[pod], "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			served[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	replica := name + "-1"
	if primary == replica {
		replica = name + "-2"
	}
	g.Expect(bodies[primary]).To(ContainSubstring(`platform_postgres_role{role="primary"} 1`))
	g.Expect(bodies[primary]).To(ContainSubstring("platform_postgres_collect_errors 0"))
	g.Expect(bodies[replica]).To(ContainSubstring(`platform_postgres_role{role="replica"} 1`))
	g.Expect(bodies[replica]).To(ContainSubstring("platform_postgres_collect_errors 0"))
	g.Expect(bodies[primary]).To(MatchRegexp(`platform_postgres_database_size_bytes\{database="app"\} \d`))

	// The names the monitoring component reads, in its alerts and its
	// dashboard.
	read := map[string]bool{}
	for _, file := range []string{"prometheus_rule.yaml", "dashboard.json"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "components", "monitoring", file))
		g.Expect(err).NotTo(HaveOccurred())
		for _, name := range regexp.MustCompile(`platform_postgres_[a-z0-9_]+`).FindAllString(string(data), -1) {
			read[name] = true
		}
	}
	g.Expect(read).NotTo(BeEmpty())
	for name := range read {
		if !served[name] && !slices.Contains(archiveOnlyMetrics, name) {
			t.Errorf("the monitoring component reads %s, which no scrape of an instance returned", name)
		}
	}
	t.Logf("%d platform_postgres_ metrics read by the alerts and the dashboard, %d served by the scrapes", len(read), len(served))
}
