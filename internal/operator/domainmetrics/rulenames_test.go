package domainmetrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"example.com/platform-operator/internal/instance"
)

// dashboardFile is deploy/'s Grafana dashboard, relative to this package.
const dashboardFile = "../../../deploy/components/monitoring/dashboard.json"

// scrapeSeries are the series Prometheus makes itself for each target,
// which no exporter serves.
var scrapeSeries = []string{"up"}

// served are the metric names the operator's /metrics serves, from a
// gather of controller-runtime's registry with the domain metrics
// registered as newManager registers them and every kind's objects in the
// cache, and those of an instance manager's /metrics, from its collector's
// descriptions — not from a list written by hand. test/e2e's
// TestPostgresInstanceMetrics checks the instances' names against a real
// scrape.
func served(t *testing.T) []string {
	t.Helper()
	Register(fakeCache(t, fixtures()...), []string{Website, Tenant, BackupJob, PostgresCluster})
	t.Cleanup(func() { Register(nil, nil) })
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Clone(scrapeSeries)
	for _, f := range families {
		names = append(names, f.GetName())
	}
	return append(names, instance.MetricNames()...)
}

// Every metric the alerts read is one the operator or an instance serves.
func TestAlertsReadOnlyMetricsTheOperatorServes(t *testing.T) {
	served := served(t)
	rule, _ := readRule(t)
	read := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("alert %s: found no metric in %q", r.Alert, r.Expr)
			}
			for _, name := range names {
				read++
				if !slices.Contains(served, name) {
					t.Errorf("alert %s reads %s, which neither the operator nor an instance serves", r.Alert, name)
				}
			}
		}
	}
	t.Logf("%d metric reads in the alerts, checked against %d served metric names", read, len(served))
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`time() - max by (namespace, name) (a_seconds{kind="x", status="False"}) > 2 * max by (namespace) (b - c) unless on (name) absent(up{job="j"} == 1)`)
	want := []string{"a_seconds", "b", "c", "up"}
	if !slices.Equal(got, want) {
		t.Errorf("metricNames = %v, want %v", got, want)
	}
}

// dashboard is what the tests read of the Grafana dashboard: its panels'
// queries and its variables' label_values queries.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardMetrics returns, per panel or variable, the metrics the
// dashboard of file reads.
func dashboardMetrics(t *testing.T, file string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			out["panel "+p.Title] = append(out["panel "+p.Title], metricNames(target.Expr)...)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(METRIC...)", v.Name, v.Query)
			continue
		}
		out["variable "+v.Name] = append(out["variable "+v.Name], m[1])
	}
	return out
}

// Every metric the dashboard draws is one the operator or an instance
// serves, and every panel draws one.
func TestDashboardReadsOnlyServedMetrics(t *testing.T) {
	served := served(t)
	for where, names := range dashboardMetrics(t, dashboardFile) {
		if len(names) == 0 {
			t.Errorf("%s reads no metric", where)
		}
		for _, name := range names {
			if !slices.Contains(served, name) {
				t.Errorf("%s reads %s, which neither the operator nor an instance serves", where, name)
			}
		}
	}
}
