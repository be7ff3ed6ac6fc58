package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/test/bench/benchkit"
)

func TestParseScenarios(t *testing.T) {
	tests := []struct {
		name, list string
		want       []string
		wantErr    string
	}{
		{name: "all, in the order they run", list: "drift,restart,cost,burst,scripted,ceiling,services", want: []string{"services", "ceiling", "scripted", "burst", "cost", "restart", "drift"}},
		{name: "the ceiling alone", list: "ceiling", want: []string{"ceiling"}},
		{name: "scale chooses the three of package scale", list: "scale,postgres", want: []string{"postgres", "backup-schedule", "tenant-onboarding", "platform-restart"}},
		{name: "one of package scale", list: "tenant-onboarding", want: []string{"tenant-onboarding"}},
		{name: "the burst alone", list: " burst ,burst", want: []string{"burst"}},
		{name: "cost needs the burst's Websites", list: "ceiling,cost", wantErr: "cost works on the Websites that the burst scenario creates"},
		{name: "footprint is no scenario: it is always measured", list: "footprint", wantErr: `unknown scenario "footprint"`},
		{name: "nothing", list: ",", wantErr: "lists no scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseScenarios(tt.list)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestOperatorClientUsesTheOperatorsOwnDefaults(t *testing.T) {
	g := NewWithT(t)
	c, err := operatorClient(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.QPS).To(BeNumerically("<", 0), "no client-side limit by default")
	g.Expect(c.Workers).To(BeNumerically(">", 1))
	c, err = operatorClient(strings.Fields("--kube-api-qps 50 --kube-api-burst=100 --max-concurrent-reconciles=4"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(clientSettings{QPS: 50, Burst: 100, Workers: 4}))
	g.Expect(c.String()).To(Equal("50 QPS, burst 100, 4 workers"))
	_, err = operatorClient([]string{"--max-concurrent-reconciles=0"})
	g.Expect(err).To(MatchError(ContainSubstring("-operator-args")))
}

func TestParseMetrics(t *testing.T) {
	g := NewWithT(t)
	text := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="201",group="",resource="services",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",group="example.com",resource="websites",scope="resource",subresource="status",verb="PATCH",version="v1"} 2e+03
# TYPE go_goroutines gauge
go_goroutines 42
# TYPE platform_operator_child_reads_total counter
platform_operator_child_reads_total{owner_kind="Website",child_kind="Service",reason="compare"} 1000
platform_operator_child_reads_total{owner_kind="Tenant",child_kind="Namespace",reason="conflict"} 2
# TYPE some_histogram histogram
some_histogram_bucket{le="1"} 1
some_histogram_bucket{le="+Inf"} 1
some_histogram_sum 0.5
some_histogram_count 1
`
	samples, err := benchkit.ParseMetrics(text, "apiserver_request_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(samples).To(HaveLen(3))
	counts := benchkit.RequestCounts{}
	for _, s := range samples {
		counts[benchkit.RequestKey(s.Labels["verb"], s.Labels["group"], s.Labels["resource"], s.Labels["subresource"])] += s.Value
	}
	g.Expect(counts).To(Equal(benchkit.RequestCounts{"POST apps/deployments": 1000, "POST services": 3, "PATCH example.com/websites/status": 2000}))
	all, err := benchkit.ParseMetrics(text)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarizeOperator(all).Goroutines).To(BeEquivalentTo(42))
	g.Expect(summarizeOperator(all).ChildReads).To(Equal(map[string]float64{"Service/compare": 1000}), "the Website controller's reads only")
	_, err = benchkit.ParseMetrics("not metrics {")
	g.Expect(err).To(HaveOccurred())
}

func TestResultsCarryNoAbsolutePath(t *testing.T) {
	g := NewWithT(t)
	saved := os.Args
	defer func() { os.Args = saved }()
	wd, err := os.Getwd()
	g.Expect(err).NotTo(HaveOccurred())
	os.Args = []string{"/tmp/go-build123/b001/exe/bench", "-operator", wd + "/bin/platform-operator", "-logs=/tmp/x/logs", "-operator-args", "--kube-api-qps=50 --max-concurrent-reconciles=4", "-peer-kopf", "/opt/kopf-peer"}
	g.Expect(commandLine(wd)).To(Equal(`KUBE_BIN_DIR=$(hack/kube-binaries.sh --dir) go run ./test/bench -operator bin/platform-operator -logs=logs -operator-args "--kube-api-qps=50 --max-concurrent-reconciles=4" -peer-kopf kopf-peer`))
	g.Expect(repoRelative(wd, wd+"/bin/platform-operator")).To(Equal("bin/platform-operator"))
	g.Expect(repoRelative(wd, "/elsewhere/platform-operator")).To(Equal("platform-operator"))
}

func TestTimelineAndCharts(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().Add(-time.Second)
	p := newProgress("test", 3, start)
	for _, k := range []string{"a", "b", "c", "a"} {
		p.mark(k)
	}
	w := p.wait(context.Background(), time.Now().Add(time.Second), t.Logf)
	g.Expect(w.ok()).To(BeTrue())
	g.Expect(w.Timeline).To(HaveLen(3), "one point per object when there are fewer than timelinePoints")
	g.Expect(w.Timeline[2]).To(Equal(w.Seconds))

	res := &results{Load: clientSettings{QPS: -1, Workers: 16}, Runs: []*runResult{{N: 3,
		Burst:   &burstResult{Ready: w, Exist: w},
		Ceiling: &ceilingResult{Available: w, Exist: w}}}}
	svg := overTimeChart(res, res.Runs[0])
	g.Expect(svg).To(ContainSubstring("<polyline"))
	g.Expect(svg).To(ContainSubstring("no client-side rate limit, 16 workers"))
	g.Expect(markdown(res)).To(ContainSubstring(overTimeFile(3)))
}

func TestCPUWorkRatio(t *testing.T) {
	g := NewWithT(t)
	ceiling := map[string]float64{"kube-apiserver": 6, "etcd": 2, "kube-controller-manager": 2, benchName: 5, machineName: 30}
	burst := map[string]float64{"kube-apiserver": 9, "etcd": 3, "kube-controller-manager": 3, operatorName: 3, benchName: 5, machineName: 40}
	g.Expect(cpuWorkRatio(burst, ceiling)).To(BeNumerically("~", 1.8, 0.001), "the operator and the control plane against the control plane; this program and other processes apart")
	g.Expect(cpuWorkRatio(burst, nil)).To(BeZero())
	g.Expect(controlPlaneRatio(burst, ceiling)).To(BeNumerically("~", 1.5, 0.001), "the control plane alone")
	g.Expect(controlPlaneRatio(nil, ceiling)).To(BeZero())
}

func TestMedianOfRoundsNeedsEveryRound(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	extra := []roundResult{{ExistRatio: f(1.4), ReadyRatio: f(1.1)}, {ExistRatio: f(1.2), ReadyRatio: nil}}
	last := &runResult{Ceiling: &ceilingResult{}, Burst: &burstResult{ExistRatio: f(1.3), ReadyRatio: f(1.2)}}
	got := summarizeRounds(extra, last)
	if len(got.Rounds) != 3 || got.ExistRatio == nil || *got.ExistRatio != 1.3 {
		t.Errorf("exist median of 1.4, 1.2 and the last run's 1.3 = %v over %d rounds, want 1.3 over 3", ratioStr(got.ExistRatio), len(got.Rounds))
	}
	if got.ReadyRatio != nil {
		t.Errorf("ready median with a round missing its ratio = %v, want none", *got.ReadyRatio)
	}
}

func TestCostWithinBudgetNeedsNoChildReadPastTheCache(t *testing.T) {
	within := func(reads map[string]float64) bool {
		c := &costResult{PerWebsite: operatorWrites{Deployments: 1, Services: 1, WebsitesStatus: 2}, EventsPerWebsite: 1, ChildReads: reads}
		return c.withinBudget()
	}
	if !within(map[string]float64{}) {
		t.Error("no reads counted: within the budget")
	}
	if within(map[string]float64{"Service/compare": 1}) {
		t.Error("a Service read past the cache: over the budget")
	}
	if within(nil) {
		t.Error("reads not counted: not judged within the budget")
	}
}
