package postgres

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/test/bench/benchkit"
)

func secs(v float64) *float64 { return &v }

func series(tries ...Try) Series {
	s := Series{Tries: tries}
	s.summarize()
	return s
}

func done(from, to string, seconds float64) Try {
	return Try{From: from, To: to, Seconds: secs(seconds), RecoveredSeconds: secs(20)}
}

// A series is judged on its p99 over every try asked for: a try that did
// not complete misses the target whatever the others did, one this program
// could not run (or fewer tries than asked) leaves it not judged.
func TestSeriesVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Series
		tries   int
		wantMet string
	}{
		{"every try within", series(done("db-1", "db-2", 4), done("db-2", "db-3", 9.9)), 2, "yes"},
		{"the slowest over", series(done("db-1", "db-2", 4), done("db-2", "db-3", 10.1)), 2, "no"},
		{"a try that did not complete", series(done("db-1", "db-2", 4), Try{From: "db-2", TimedOut: true}), 2, "no (1 of 2 tries did not complete)"},
		{"a try this program could not run", series(done("db-1", "db-2", 4), Try{Error: "pods is forbidden"}), 2, "not judged (1 of 2 tries measured)"},
		{"fewer tries than asked", series(done("db-1", "db-2", 4)), 10, "not judged (1 of 10 tries measured)"},
		{"nothing", Series{}, 10, "not judged (0 of 10 tries measured)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := seriesCheck("failover", "p99 ≤ 10 s", tc.s, tc.tries, 10)
			g.Expect(c.Met).To(Equal(tc.wantMet))
		})
	}
}

func TestSeriesFigureShowsEveryTry(t *testing.T) {
	g := NewWithT(t)
	s := series(done("db-1", "db-2", 4.25), Try{From: "db-2", TimedOut: true}, Try{Error: "x"})
	g.Expect(seriesFigure(s)).To(Equal("p50 4.25 s, p99 4.25 s, max 4.25 s over 1 tries (4.25, none, error s)"))
	g.Expect(seriesFigure(Series{})).To(Equal("not measured"))
}

func TestChecksJudgeTheCutOffOnTheLeaseRead(t *testing.T) {
	g := NewWithT(t)
	lost := 0
	res := &Results{Tries: 2, Cluster: ClusterSpec{Instances: 3, Synchronous: 1},
		Ready:      Timed{Seconds: 30, OK: true},
		Failover:   series(done("db-1", "db-2", 8), done("db-2", "db-3", 9)),
		Switchover: series(done("db-3", "db-1", 3), done("db-1", "db-2", 6)),
		CutOff:     series(done("db-2", "db-3", 14), done("db-3", "db-1", 16)),
		Writer:     Writer{Committed: 100, Failed: 20, Lost: &lost},
		Operator:   benchkit.Footprint{HWMMiB: []float64{50}},
	}
	byScenario := func() map[string]benchkit.Check {
		out := map[string]benchkit.Check{}
		for _, c := range Checks(res) {
			out[c.Scenario] = c
		}
		return out
	}
	c := byScenario()
	g.Expect(c["failover"].Met).To(Equal("yes"))
	g.Expect(c["switchover"].Met).To(Equal("no"), "6 s > 5 s")
	g.Expect(c["cut-off"].Met).To(HavePrefix("not judged"), "no lease read")
	g.Expect(c["rows lost"].Met).To(Equal("yes"))
	g.Expect(c["ready"].Met).To(Equal("n/a (no target)"))

	res.LeaseDurationSeconds = 10
	c = byScenario()
	g.Expect(c["cut-off"].Target).To(ContainSubstring("10 s + 5 s = 15 s"))
	g.Expect(c["cut-off"].Met).To(Equal("no"), "16 s > 15 s")
	res.LeaseDurationSeconds = 12
	g.Expect(byScenario()["cut-off"].Met).To(Equal("yes"), "16 s ≤ 17 s")

	one := 1
	res.Writer.Lost = &one
	g.Expect(byScenario()["rows lost"].Met).To(Equal("no"))
	res.Writer.Lost, res.Writer.LostError = nil, "connection refused"
	g.Expect(byScenario()["rows lost"].Met).To(HavePrefix("not judged"))
}

func TestMarkdownAndChart(t *testing.T) {
	g := NewWithT(t)
	lost := 0
	res := &Results{Tries: 1, Cluster: ClusterSpec{Instances: 3, Synchronous: 1, Storage: "256Mi", Image: "postgres:15"},
		Ready: Timed{Seconds: 30, OK: true}, LeaseDurationSeconds: 10,
		Failover:         series(Try{From: "db-1", To: "db-2", Seconds: secs(8), StatusSeconds: secs(7), RecoveredSeconds: secs(20), Events: map[string]float64{"Promoted": 6.5, "FailoverStarted": 1.25}}),
		Switchover:       series(done("db-2", "db-3", 3)),
		CutOff:           series(Try{From: "db-3", TimedOut: true}),
		Writer:           Writer{Committed: 100, Lost: &lost, EveryMs: 50, TimeoutMs: 1000},
		InstanceManagers: []benchkit.ProcessPeak{{Name: "db-1", PID: 42, HWMMiB: 40.5, PeakRSSMiB: 40, CPUSeconds: 1}},
	}
	res.Benchmark = Benchmark
	res.Started = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	res.Checks = Checks(res)
	md := Markdown(res)
	g.Expect(md).To(ContainSubstring("| failover (pod deleted) | 1 | db-1 | db-2 | 8.00 | 7.00 | FailoverStarted 1.25, Promoted 6.50 | 20.00 |  |"))
	g.Expect(md).To(ContainSubstring("| failover (cut off) | 1 | db-3 |  | — | — | — | — | no write on a new primary within 2m0s |"))
	g.Expect(md).To(ContainSubstring("| instance manager of db-1 | 42 | 40.5 | 40.0 | 1.0 |"))
	g.Expect(md).To(ContainSubstring("![every try against its target](failover.svg)"))
	svg := Chart(res).SVG()
	g.Expect(strings.Count(svg, "<circle")).To(Equal(2+1), "a dot per completed try, one in the legend")
	g.Expect(svg).To(ContainSubstring("target 15"))
}

func TestNextInstanceGoesRound(t *testing.T) {
	g := NewWithT(t)
	g.Expect(nextInstance("db-1")).To(Equal("db-2"))
	g.Expect(nextInstance("db-3")).To(Equal("db-1"))
	g.Expect(nextInstance("")).To(Equal("db-1"))
}

// The writer's first commit after a moment on a server that a test
// accepts is found whatever came before.
func TestFirstCommitAfter(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Now()
	w := &writer{commits: []commit{
		{id: 1, at: t0.Add(-time.Second), server: "10.0.0.2"},
		{id: 2, at: t0.Add(time.Second), server: "10.0.0.1"},
		{id: 3, at: t0.Add(2 * time.Second), server: "10.0.0.2"},
	}}
	c, ok := w.firstAfter(t0, func(s string) bool { return s == "10.0.0.2" })
	g.Expect(ok).To(BeTrue())
	g.Expect(c.id).To(BeEquivalentTo(3))
	_, ok = w.firstAfter(t0.Add(3*time.Second), func(string) bool { return true })
	g.Expect(ok).To(BeFalse())
}
