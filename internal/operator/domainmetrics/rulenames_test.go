package domainmetrics

import (
	"slices"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// scrapeSeries are the series Prometheus makes itself for each target,
// which no exporter serves.
var scrapeSeries = []string{"up"}

// Every metric the alerts read is one the operator serves: the names are
// taken from a gather of controller-runtime's registry, which the
// operator's /metrics serves, with the domain metrics registered as
// newManager registers them and every kind's objects in the cache — not
// from a list written by hand.
func TestAlertsReadOnlyMetricsTheOperatorServes(t *testing.T) {
	Register(fakeCache(t, fixtures()...), []string{Website, Tenant, BackupJob, PostgresCluster})
	t.Cleanup(func() { Register(nil, nil) })
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := slices.Clone(scrapeSeries)
	for _, f := range families {
		served = append(served, f.GetName())
	}

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
					t.Errorf("alert %s reads %s, which the operator does not serve", r.Alert, name)
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
