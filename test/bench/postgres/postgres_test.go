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
		Failover:         series(Try{From: "db-1", To: "db-2", Seconds: secs(8), PauseSeconds: secs(8.2), StatusSeconds: secs(7), RecoveredSeconds: secs(20), Events: map[string]float64{"Promoted": 6.5, "FailoverStarted": 1.25}}),
		Switchover:       series(done("db-2", "db-3", 3)),
		CutOff:           series(Try{From: "db-3", TimedOut: true}),
		Writer:           Writer{Committed: 100, Lost: &lost, EveryMs: 50, TimeoutMs: 1000},
		InstanceManagers: []benchkit.ProcessPeak{{Name: "db-1", PID: 42, HWMMiB: 40.5, PeakRSSMiB: 40, CPUSeconds: 1}},
	}
	res.Benchmark = Benchmark
	res.Started = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	res.Checks = Checks(res)
	md := Markdown(res)
	g.Expect(md).To(ContainSubstring("| failover (pod deleted, 1 s grace) | 1 | db-1 | db-2 | 8.00 | 8.20 | 7.00 | FailoverStarted 1.25, Promoted 6.50 | 20.00 |  |"))
	g.Expect(md).To(ContainSubstring("| failover (cut off) | 1 | db-3 |  | — | — | — | — | — | no write on a new primary within 2m0s |"))
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

// The client's view is the longest time between two consecutive commits
// from the last one before the action up to the first on the new
// primary: a graceful stop's last writes and the reconnection count.
func TestLongestPause(t *testing.T) {
	t0 := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	at := func(ms int) commit { return commit{at: t0.Add(time.Duration(ms) * time.Millisecond)} }
	commits := []commit{at(-100), at(-50), at(0), at(50), at(1250), at(1300), at(4300), at(4350)}
	for _, tc := range []struct {
		name        string
		from, until int
		wantMs      int
	}{
		{"from the last commit before the action to the first after the pause", 10, 4300, 3000},
		{"the action on a commit: that commit is the last before it", 0, 1250, 1200},
		{"up to a commit before the long pause", 10, 1300, 1200},
		{"before every commit", -1000, -50, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := longestPause(commits, t0.Add(time.Duration(tc.from)*time.Millisecond), t0.Add(time.Duration(tc.until)*time.Millisecond))
			if got != time.Duration(tc.wantMs)*time.Millisecond {
				t.Errorf("longest pause %s, want %d ms", got, tc.wantMs)
			}
		})
	}
}

// Issue 54's targets are judged on the pauses, not on the time to the
// first write: a switchover whose first write came at 1.5 s after a pause
// of 2.5 s misses the 2 s target.
func TestClientChecksJudgeThePauses(t *testing.T) {
	g := NewWithT(t)
	paused := func(from, to string, seconds, pause float64) Try {
		t := done(from, to, seconds)
		t.PauseSeconds = secs(pause)
		return t
	}
	res := &Results{Tries: 2, LeaseDurationSeconds: 10,
		Failover:        series(paused("db-1", "db-2", 1.2, 1.3), paused("db-2", "db-3", 1.4, 2.9)),
		FailoverNoGrace: series(paused("db-1", "db-2", 1.2, 3.1), paused("db-2", "db-3", 1.4, 1.5)),
		Switchover:      series(paused("db-3", "db-1", 1.5, 2.5), paused("db-1", "db-2", 1.0, 1.1)),
		CutOff:          series(paused("db-2", "db-3", 11, 12.5), paused("db-3", "db-1", 12, 12.9)),
	}
	byScenario := map[string]benchkit.Check{}
	for _, c := range Checks(res) {
		byScenario[c.Scenario] = c
	}
	g.Expect(byScenario["client: failover, 1 s grace"].Met).To(Equal("yes"))
	g.Expect(byScenario["client: failover, no grace"].Met).To(Equal("no"), "3.1 s > 3 s")
	g.Expect(byScenario).NotTo(HaveKey("client: failover, default grace"), "a series not run is not judged")
	g.Expect(byScenario["client: switchover"].Met).To(Equal("no"), "2.5 s > 2 s")
	g.Expect(byScenario["switchover"].Met).To(Equal("yes"), "the first write came within issue 29's 5 s")
	g.Expect(byScenario["client: cut-off"].Met).To(Equal("yes"), "12.9 s ≤ 10 s + 3 s")
	g.Expect(byScenario["client: cut-off"].Figure).To(HavePrefix("p50 12.50 s, p99 12.90 s"))
}
