package benchkit

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// ForEach retries each item up to five times, counts the items that still
// failed and keeps the first error.
func TestForEachRetriesAndCountsFailures(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	attempts := map[int]int{}
	failing := errors.New("item 1 always fails")
	failures, first := ForEach(context.Background(), 3, 2, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[i]++
		switch {
		case i == 1:
			return failing
		case i == 2 && attempts[i] == 1:
			return errors.New("item 2 fails once")
		}
		return nil
	})
	g.Expect(failures).To(Equal(1))
	g.Expect(first).To(MatchError(failing))
	g.Expect(attempts).To(Equal(map[int]int{0: 1, 1: 5, 2: 2}))
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	g := NewWithT(t)
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	g.Expect(Percentile(ten, 0.50)).To(Equal(5.0), "the 5th of 10")
	g.Expect(Percentile(ten, 0.99)).To(Equal(10.0), "of ten tries, p99 is the slowest")
	g.Expect(Percentile(ten, 0.90)).To(Equal(9.0))
	g.Expect(Percentile([]float64{7}, 0.99)).To(Equal(7.0))
	g.Expect(Percentile(ten, 0)).To(Equal(1.0))
}

func TestSummarizeSortsAndRounds(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Summarize(nil)).To(Equal(Distribution{}))
	g.Expect(Summarize([]float64{3.00049, 1, 2.5, 9.9996})).To(Equal(Distribution{Samples: 4, P50: 2.5, P99: 10, Max: 10}))
}

func TestMedianNeedsEveryValue(t *testing.T) {
	g := NewWithT(t)
	f := func(v float64) *float64 { return &v }
	g.Expect(*Median([]*float64{f(1.4), f(1.2), f(1.3)})).To(Equal(1.3))
	g.Expect(*Median([]*float64{f(1), f(2)})).To(Equal(1.5), "the mean of the middle two")
	g.Expect(Median([]*float64{f(1), nil, f(2)})).To(BeNil(), "a round without its figure makes no median")
	g.Expect(Median(nil)).To(BeNil())
}

func TestRound3(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Round3(1.0005)).To(BeNumerically("~", 1.001, 1e-9))
	g.Expect(Round3(-1.0005)).To(BeNumerically("~", -1.001, 1e-9))
	g.Expect(Round3(2)).To(Equal(2.0))
}

func TestNiceCeilAndTrimFloat(t *testing.T) {
	g := NewWithT(t)
	for v, want := range map[float64]float64{0: 1, 0.7: 1, 1.1: 2, 2.2: 2.5, 3: 5, 7: 10, 11: 20, 240: 250} {
		g.Expect(NiceCeil(v)).To(BeNumerically("~", want, 1e-9), "NiceCeil(%g)", v)
	}
	g.Expect(TrimFloat(2.50)).To(Equal("2.5"))
	g.Expect(TrimFloat(10)).To(Equal("10"))
	g.Expect(TrimFloat(0.126)).To(Equal("0.13"))
}

func TestRequestCounts(t *testing.T) {
	g := NewWithT(t)
	before := RequestCounts{"POST v1/pods": 1, "GET pods": 5}
	after := RequestCounts{"POST v1/pods": 4, "GET pods": 9, "PATCH example.com/tenants/status": 2, "DELETE secrets": 1}
	g.Expect(after.WritesSince(before)).To(Equal(RequestCounts{"POST v1/pods": 3, "PATCH example.com/tenants/status": 2, "DELETE secrets": 1}))
	g.Expect(after.ReadsSince(before)).To(Equal(RequestCounts{"GET pods": 4}))
	w := after.WritesSince(before)
	g.Expect(w.Sum("example.com/tenants/status")).To(Equal(2.0))
	g.Expect(w.Sum("v1/pods", "POST")).To(BeZero())
	g.Expect(w.Verb("DELETE", "secrets")).To(Equal(1.0))
	g.Expect(w.Sorted()).To(Equal([]string{"POST v1/pods=3", "PATCH example.com/tenants/status=2", "DELETE secrets=1"}))
	g.Expect(RequestKey("PATCH", "example.com", "tenants", "status")).To(Equal("PATCH example.com/tenants/status"))
}

func TestSumSamplesMatchesLabels(t *testing.T) {
	g := NewWithT(t)
	samples, err := ParseMetrics(`# TYPE platform_operator_child_writes_total counter
platform_operator_child_writes_total{owner_kind="Tenant",child_kind="Secret",operation="issue"} 3
platform_operator_child_writes_total{owner_kind="Tenant",child_kind="Secret",operation="create"} 3
platform_operator_child_writes_total{owner_kind="BackupJob",child_kind="Job",operation="create"} 7
`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(SumSamples(samples, "platform_operator_child_writes_total", map[string]string{"owner_kind": "Tenant", "operation": "issue"})).To(Equal(3.0))
	g.Expect(SumSamples(samples, "platform_operator_child_writes_total", map[string]string{"owner_kind": "Tenant"})).To(Equal(6.0))
	g.Expect(SumSamples(samples, "platform_operator_child_writes_total", nil)).To(Equal(13.0))
	g.Expect(SumSamples(samples, "other", nil)).To(BeZero())
}

// A histogram's sum and count are read under the names the text format
// gives them, as apiserver_watch_events_sizes_sum is.
func TestParseMetricsReadsHistogramSums(t *testing.T) {
	g := NewWithT(t)
	samples, err := ParseMetrics(`# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="apps",resource="deployments",version="v1",le="1024"} 1
apiserver_watch_events_sizes_bucket{group="apps",resource="deployments",version="v1",le="+Inf"} 3
apiserver_watch_events_sizes_sum{group="apps",resource="deployments",version="v1"} 9000
apiserver_watch_events_sizes_count{group="apps",resource="deployments",version="v1"} 3
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="apps",resource="deployments",version="v1"} 3
`, "apiserver_watch_events_sizes_sum", "apiserver_watch_events_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(samples).To(HaveLen(2))
	g.Expect(SumSamples(samples, "apiserver_watch_events_sizes_sum", map[string]string{"resource": "deployments"})).To(Equal(9000.0))
	g.Expect(SumSamples(samples, "apiserver_watch_events_total", nil)).To(Equal(3.0))
	before := WatchTraffic{Events: map[string]float64{"apps/deployments": 3}, Bytes: map[string]float64{"apps/deployments": 9000}}
	after := WatchTraffic{Events: map[string]float64{"apps/deployments": 5, "pods": 2}, Bytes: map[string]float64{"apps/deployments": 15000, "pods": 4000}}
	g.Expect(after.Since(before)).To(Equal(WatchTraffic{
		Events: map[string]float64{"apps/deployments": 2, "pods": 2},
		Bytes:  map[string]float64{"apps/deployments": 6000, "pods": 4000},
	}))
}

// The process sampler keeps each process under its name and PID, with the
// highest memory seen: this test's own process stands in for an instance
// manager.
func TestProcessSamplerRecordsEachProcess(t *testing.T) {
	g := NewWithT(t)
	pid := os.Getpid()
	s := StartProcessSampler(10*time.Millisecond, func() map[string]int { return map[string]int{"self": pid, "gone": math.MaxInt32} })
	time.Sleep(50 * time.Millisecond)
	s.Close()
	procs := s.Processes()
	g.Expect(procs).To(HaveLen(1), "a process that does not exist is not recorded")
	g.Expect(procs[0].Name).To(Equal("self"))
	g.Expect(procs[0].PID).To(Equal(pid))
	g.Expect(procs[0].Samples).To(BeNumerically(">=", 2))
	g.Expect(procs[0].HWMMiB).To(BeNumerically(">=", procs[0].PeakRSSMiB), "VmHWM is the kernel's peak, at least any sample")
	g.Expect(procs[0].PeakRSSMiB).To(BeNumerically(">", 0))
}

func TestDotChartDrawsEveryValueAndTarget(t *testing.T) {
	g := NewWithT(t)
	target := 10.0
	svg := DotChart{
		Title: "Failover", YLabel: "seconds",
		Series: []Series{{Name: "tries", Color: "#1f77b4"}},
		Groups: []DotGroup{{Label: "pod deleted", Values: [][]float64{{3, 4, 5}}, Target: &target}, {Label: "switchover\n<spec.primary>", Values: [][]float64{{1}}}},
		Notes:  []string{"2 CPUs"},
	}.SVG()
	g.Expect(strings.Count(svg, "<circle")).To(Equal(4+1), "a dot per value and one per series in the legend")
	g.Expect(svg).To(ContainSubstring("target 10"))
	g.Expect(svg).To(ContainSubstring("&lt;spec.primary&gt;"), "labels are escaped")
	g.Expect(DotChart{Title: "empty"}.SVG()).To(ContainSubstring("nothing measured"))
}

func TestMarkdownTargets(t *testing.T) {
	g := NewWithT(t)
	w := &MarkdownWriter{}
	w.Targets([]Check{{Scenario: "failover", Target: "p99 ≤ 10 s", Figure: "p99 4.2 s", Met: YesNo(true)}}, false)
	g.Expect(w.String()).To(Equal("## Targets\n\n| Scenario | Target | Measured | met? |\n|---|---|---|---|\n| failover | p99 ≤ 10 s | p99 4.2 s | yes |\n\n"))
	w = &MarkdownWriter{}
	w.Targets([]Check{{Scenario: "schedule", N: 100, Target: "0 missed", Figure: "0", Met: NotJudged("the window did not finish")}}, true)
	g.Expect(w.String()).To(ContainSubstring("| schedule | 100 | 0 missed | 0 | not judged (the window did not finish) |"))
}
