package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/platform"
)

// ruleFile is the PrometheusRule of the monitoring component.
const ruleFile = "deploy/components/monitoring/prometheus_rule.yaml"

// The alerts of deploy/components/monitoring, unchanged, evaluated by a
// real Prometheus server (hack/prometheus.sh builds it) that scrapes the
// local cluster as the component's PodMonitor and ServiceMonitor would
// have the Prometheus Operator scrape a real one: each PostgreSQL
// instance's /metrics and the operator's, with the token of a
// ServiceAccount bound to platform-operator-metrics-reader, labelled as
// those monitors label them. Healthy, every target is up, every metric
// the rules read is stored and no alert is active. Then a replica's
// PostgreSQL hangs (SIGSTOP), and later the primary's (a failoverDelay
// holds the failover off): each time the alerts whose expressions match
// become active (pending: their for: durations are promtool's to check),
// with the labels of the right pod and cluster, and no other; once it
// continues, none is. Prometheus dials only loopback and the pods' network
// namespace addresses: static targets, no service discovery, which would
// hand it the simulated pod IPs that belong to no host.
func TestPostgresAlertsInPrometheus(t *testing.T) {
	bin := prometheusBinary(t)
	g := NewWithT(t)
	e, ns := pgNamespace(t)
	const name = "alerts"
	// The primary's hang below must stay one, not turn into a failover
	// that would end it.
	e.newPostgresCluster(t, ns, name, 2, 0, func(pg *v1alpha1.PostgresCluster) { pg.Spec.FailoverDelay = 600 })
	pg := e.waitPostgresReady(t, ns, name, 2)
	primary := pg.Status.CurrentPrimary
	g.Expect(primary).NotTo(BeEmpty())
	replica := otherThan(name, primary)

	token := e.serviceAccountToken(t, ns, "prometheus")
	out, err := e.Kubectl(t.Context(), "create", "clusterrolebinding", "prometheus-alerts-"+ns,
		"--clusterrole=platform-operator-metrics-reader", "--serviceaccount="+ns+":prometheus")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), "delete", "clusterrolebinding", "prometheus-alerts-"+ns)
	})

	operatorURL, err := url.Parse(e.operator().MetricsURL)
	g.Expect(err).NotTo(HaveOccurred())
	var instances []scrapeTarget
	for _, pod := range []string{name + "-1", name + "-2"} {
		address, err := e.Cluster.PostgresAddress(ns, pod)
		g.Expect(err).NotTo(HaveOccurred())
		instances = append(instances, scrapeTarget{
			address: net.JoinHostPort(address, strconv.Itoa(pgspec.MetricsPort)),
			// What the PodMonitor platform-postgres gives each series:
			// the pod's namespace, name and container, its port's name,
			// and cluster relabelled from the pod's label.
			labels: map[string]string{"namespace": ns, "pod": pod, "container": pgspec.ContainerName, "endpoint": "metrics", "cluster": name},
		})
	}
	prom := startPrometheus(t, bin, token, scrapeTarget{
		address: operatorURL.Host,
		// What the ServiceMonitor platform-operator gives: the Service's
		// namespace and name. The operator runs here as a process, not a
		// pod.
		labels: map[string]string{"namespace": platform.Namespace, "service": platform.Name + "-metrics", "endpoint": "metrics"},
	}, instances)

	allowed := []string{operatorURL.Host}
	for _, target := range instances {
		allowed = append(allowed, target.address)
	}
	rules := ruleNames(t)
	t.Log("Healthy: every target up, every rule evaluated, no alert active")
	g.Eventually(func(g Gomega) {
		targets := prom.targets(g)
		g.Expect(targets).To(HaveLen(1+len(instances)), "the targets of the config")
		for _, target := range targets {
			g.Expect(target.Health).To(Equal("up"), "%s: %s", target.ScrapeURL, target.LastError)
			scraped, err := url.Parse(target.ScrapeURL)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(scraped.Host).To(BeElementOf(allowed), "only loopback and the pods' namespace addresses")
		}
		var evaluated []string
		for _, r := range prom.rules(g) {
			g.Expect(r.Health).To(Equal("ok"), "rule %s: %s", r.Name, r.LastError)
			evaluated = append(evaluated, r.Name)
		}
		g.Expect(evaluated).To(ConsistOf(rules), "the rules of %s", ruleFile)
		// PlatformOperatorDown reads up{job="platform-operator-metrics"}:
		// inactive once the operator's job is scraped under that name.
		g.Expect(prom.activeAlerts(g, ns)).To(BeEmpty())
		up := prom.query(g, fmt.Sprintf(`platform_postgres_up{namespace=%q, cluster=%q}`, ns, name))
		g.Expect(up).To(HaveLen(2))
		for _, s := range up {
			g.Expect(s.Metric["pod"]).To(BeElementOf(name+"-1", name+"-2"))
			g.Expect(s.Value[1]).To(Equal("1"), "%v", s.Metric)
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	// Every platform_postgres_ metric the rules read, in what Prometheus
	// scraped itself.
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`platform_postgres_[a-z0-9_]+`).FindAllString(readFile(t, filepath.Join(repoRoot, ruleFile)), -1) {
		read[m] = true
	}
	g.Eventually(func(g Gomega) {
		stored := map[string]bool{}
		for _, s := range prom.query(g, fmt.Sprintf(`group by (__name__) ({__name__=~"platform_postgres_.+", namespace=%q, cluster=%q})`, ns, name)) {
			stored[s.Metric["__name__"]] = true
		}
		for m := range read {
			if !slices.Contains(archiveOnlyMetrics, m) {
				g.Expect(stored).To(HaveKey(m), "a metric the rules read, in Prometheus")
			}
		}
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	t.Logf("%d platform_postgres_ metrics read by the rules, all but the archive's in Prometheus", len(read))

	instanceDown := func(pod string) map[string]string {
		return map[string]string{"alertname": "PostgresInstanceDown", "severity": "warning", "namespace": ns, "cluster": name, "pod": pod}
	}

	t.Logf("The replica %s's PostgreSQL hung (SIGSTOP): its instance manager runs on and answers scrapes", replica)
	prom.hangPostgres(t, e, ns, replica, alertsExpected{
		// Its manager's scrape cannot reach PostgreSQL: up 0. The primary
		// and the operator see a replica gone, which no alert is about.
		required: []map[string]string{instanceDown(replica)},
	})
	e.waitPostgresReady(t, ns, name, 2)

	t.Logf("The primary %s's PostgreSQL hung", primary)
	prom.hangPostgres(t, e, ns, primary, alertsExpected{
		required: []map[string]string{
			instanceDown(primary),
			// The operator: PrimaryAvailable False while failoverDelay runs.
			{"alertname": "PostgresClusterNoPrimary", "severity": "critical", "namespace": ns, "name": name},
		},
		// What follows on the replica, in its own time: its WAL receiver
		// times out (wal_receiver_timeout) and cannot connect again; after
		// rewindAfter of that its manager stops PostgreSQL to rewind it
		// onto the primary, which waits for the primary to answer.
		may: []map[string]string{
			{"alertname": "PostgresReplicaNotStreaming", "severity": "warning", "namespace": ns, "cluster": name, "pod": replica},
			instanceDown(replica),
		},
	})
	e.waitPostgresReady(t, ns, name, 2)
}

// alertsExpected are the alerts a fault must make active, and those it may.
type alertsExpected struct {
	required, may []map[string]string
}

// hangPostgres stops the PostgreSQL processes of pod (SIGSTOP) until the
// alerts of namespace ns are the required ones and perhaps some of may,
// and no other; then it continues them, and waits until no alert of ns is
// active.
func (p *prometheusServer) hangPostgres(t *testing.T, e *environment, ns, pod string, want alertsExpected) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(e.Cluster.PausePostgres(ns, pod)).To(Succeed())
	hung := time.Now()
	t.Cleanup(func() { _ = e.Cluster.ResumePostgres(ns, pod) })
	var active []promAlert
	g.Eventually(func(g Gomega) {
		active = p.activeAlerts(g, ns)
		var labels []map[string]string
		for _, a := range active {
			labels = append(labels, a.Labels)
		}
		g.Expect(labels).To(ContainElements(want.required))
		g.Expect(labels).To(HaveEach(BeElementOf(append(want.required, want.may...))), "no alert of another pod or cause")
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	for _, a := range active {
		t.Logf("%s %s, active from %s after the fault: %v", a.Labels["alertname"], a.State, a.ActiveAt.Sub(hung).Round(time.Second), a.Labels)
	}

	g.Expect(e.Cluster.ResumePostgres(ns, pod)).To(Succeed())
	resumed := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(p.activeAlerts(g, ns)).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("PostgreSQL continued; no alert active %s later", time.Since(resumed).Round(time.Second))
}

// prometheusBinary is the prometheus hack/prometheus.sh built, from
// PROMETHEUS_BIN_DIR (make test sets it); the test is skipped without it.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PROMETHEUS_BIN_DIR")
	if dir == "" {
		t.Skip("PROMETHEUS_BIN_DIR is not set: run make test, or set it to the folder hack/prometheus.sh prints")
	}
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("PROMETHEUS_BIN_DIR is set but holds no prometheus (run hack/prometheus.sh): %v", err)
	}
	return bin
}

// ruleNames are the names of the alerts of ruleFile.
func ruleNames(t *testing.T) []string {
	t.Helper()
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(repoRoot, ruleFile))), &rule); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			names = append(names, r.Alert)
		}
	}
	return names
}

// scrapeTarget is one static target of the Prometheus server: a
// loopback or network namespace address, never a simulated pod's IP.
type scrapeTarget struct {
	address string
	labels  map[string]string
}

// prometheusServer is a Prometheus server the test runs, on loopback.
type prometheusServer struct {
	url string
}

// startPrometheus runs bin with a config of the operator's target and the
// instances', and the groups of ruleFile as its rules file, until the
// test ends.
func startPrometheus(t *testing.T, bin, token string, operator scrapeTarget, instances []scrapeTarget) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, token)

	// The PrometheusRule's groups, as the Prometheus Operator hands them
	// to Prometheus.
	var rule struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(repoRoot, ruleFile))), &rule); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "rules.yaml")
	writeYAML(t, rulesFile, map[string]any{"groups": rule.Spec.Groups})

	// Both serve a certificate they made themselves at start, signed by no
	// CA (not the cluster's either, whose CA signs PostgreSQL's server
	// certificate): the monitors skip verifying it, and so does this.
	tlsConfig := map[string]any{"insecure_skip_verify": true}
	authorization := map[string]any{"type": "Bearer", "credentials_file": tokenFile}
	var instanceConfigs []any
	for _, target := range instances {
		instanceConfigs = append(instanceConfigs, map[string]any{"targets": []string{target.address}, "labels": target.labels})
	}
	config := map[string]any{
		"global":     map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		"rule_files": []string{rulesFile},
		"scrape_configs": []any{
			map[string]any{
				// The job name the ServiceMonitor gives, its Service's,
				// which PlatformOperatorDown selects.
				"job_name": platform.Name + "-metrics",
				// A scrape asks the API server to review the token: room
				// for that on a loaded machine.
				"scrape_interval": "2s", "scrape_timeout": "2s",
				"scheme": "https", "metrics_path": "/metrics",
				// As the ServiceMonitor: the series keep the namespace of
				// the object they describe.
				"honor_labels":   true,
				"authorization":  authorization,
				"tls_config":     tlsConfig,
				"static_configs": []any{map[string]any{"targets": []string{operator.address}, "labels": operator.labels}},
			},
			map[string]any{
				// The job label the Prometheus Operator gives a
				// PodMonitor's series: its namespace and name.
				"job_name": platform.Namespace + "/platform-postgres",
				// An instance's scrape waits up to 5 s for PostgreSQL
				// before it reports up 0: the timeout must exceed that, as
				// Prometheus' default of 10 s does for the PodMonitor's
				// 30 s interval, or a hung PostgreSQL times the scrape out
				// and PostgresInstanceDown sees no series at all.
				"scrape_interval": "10s", "scrape_timeout": "10s",
				"scheme": "https", "metrics_path": "/metrics",
				"authorization":  authorization,
				"tls_config":     tlsConfig,
				"static_configs": instanceConfigs,
			},
		},
	}
	configFile := filepath.Join(dir, "prometheus.yaml")
	writeYAML(t, configFile, config)

	ports, err := devenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	process := localcluster.NewProcess("prometheus", bin, filepath.Join(dir, "prometheus.log"),
		"--config.file="+configFile, "--web.listen-address="+address,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--storage.tsdb.retention.time=30m")
	if err := process.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of Prometheus' log:\n%s", devenv.TailFile(process.LogPath(), 30))
		}
		process.Kill()
	})
	p := &prometheusServer{url: "http://" + address}
	NewWithT(t).Eventually(func(g Gomega) {
		exited, err := process.Exited()
		g.Expect(exited).To(BeFalse(), "prometheus exited (%v):\n%s", err, devenv.TailFile(process.LogPath(), 20))
		status, body := devenv.HTTPGet(t.Context(), p.url+"/-/ready", "")
		g.Expect(status).To(Equal(http.StatusOK), body)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return p
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
}

// get reads an endpoint of Prometheus' HTTP API into data.
func (p *prometheusServer) get(g Gomega, path string, params url.Values, data any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := p.url + path
	if params != nil {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: %s", path, body)
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	g.Expect(json.Unmarshal(body, &answer)).To(Succeed())
	g.Expect(answer.Status).To(Equal("success"), "%s: %s", path, answer.Error)
	g.Expect(json.Unmarshal(answer.Data, data)).To(Succeed())
}

type promTarget struct {
	ScrapeURL string `json:"scrapeUrl"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p *prometheusServer) targets(g Gomega) []promTarget {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	p.get(g, "/api/v1/targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p *prometheusServer) rules(g Gomega) []promRule {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	p.get(g, "/api/v1/rules", nil, &data)
	var rules []promRule
	for _, group := range data.Groups {
		rules = append(rules, group.Rules...)
	}
	return rules
}

type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// activeAlerts are the alerts pending or firing about namespace ns, and
// PlatformOperatorDown, which is about no namespace.
func (p *prometheusServer) activeAlerts(g Gomega, ns string) []promAlert {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	p.get(g, "/api/v1/alerts", nil, &data)
	var active []promAlert
	for _, a := range data.Alerts {
		if a.Labels["namespace"] == ns || a.Labels["alertname"] == "PlatformOperatorDown" {
			active = append(active, a)
		}
	}
	return active
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	// Value is [time, "value"].
	Value []any `json:"value"`
}

// query evaluates an instant query now.
func (p *prometheusServer) query(g Gomega, q string) []promSample {
	var data struct {
		Result []promSample `json:"result"`
	}
	p.get(g, "/api/v1/query", url.Values{"query": {q}}, &data)
	return data.Result
}
