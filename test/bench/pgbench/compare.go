package pgbench

import (
	"fmt"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// Targets of issue 54 on the direct path, as ratios ours ÷ by hand of the
// medians over the rounds.
const (
	tpsTarget = 0.95
	p99Target = 1.05
)

// side is one system reached one way.
type side struct{ system, path string }

func (s side) String() string { return s.system + " " + s.path }

var (
	oursDirect    = side{systemOurs, pathDirect}
	oursService   = side{systemOurs, pathService}
	byHandPrimary = side{systemByHand, pathLoopback}
)

// comparisons are what is divided by what: ours on each path by the
// hand-made servers, and the Service path by the direct one, which is the
// proxy's cost alone.
var comparisons = [][2]side{{oursDirect, byHandPrimary}, {oursService, byHandPrimary}, {oursService, oursDirect}}

// Compare computes each comparison per (synchronous, workload): the ratio
// in each round of the runs of that round, and the median over the
// rounds.
func Compare(runs []RunResult, p PgbenchSettings) []Comparison {
	var out []Comparison
	for _, sync := range p.Synchronous {
		for _, w := range p.Workloads {
			for _, c := range comparisons {
				cmp := Comparison{Workload: w, Synchronous: sync, Subject: c[0].String(), Reference: c[1].String()}
				for round := 1; round <= p.Rounds; round++ {
					subject, okS := findRun(runs, round, sync, w, c[0])
					reference, okR := findRun(runs, round, sync, w, c[1])
					var tps, p99 *float64
					if okS && okR {
						tps = ratio(subject.TPS, reference.TPS)
						p99 = ratio(subject.Latency.P99Ms, reference.Latency.P99Ms)
					}
					cmp.TPSRatios = append(cmp.TPSRatios, tps)
					cmp.P99Ratios = append(cmp.P99Ratios, p99)
				}
				cmp.MedianTPSRatio = benchkit.Median(cmp.TPSRatios)
				cmp.MedianP99Ratio = benchkit.Median(cmp.P99Ratios)
				out = append(out, cmp)
			}
		}
	}
	return out
}

// findRun is the run of a round with both figures.
func findRun(runs []RunResult, round, sync int, workload string, s side) (RunResult, bool) {
	for _, r := range runs {
		if r.Round == round && r.Synchronous == sync && r.Workload == workload && r.System == s.system && r.Path == s.path {
			return r, r.ok()
		}
	}
	return RunResult{}, false
}

// ratio is a ÷ b to three decimals, nil when b is not positive.
func ratio(a, b float64) *float64 {
	if b <= 0 {
		return nil
	}
	v := benchkit.Round3(a / b)
	return &v
}

// Checks judges the direct path against the targets; the Service path
// and the proxy's cost are shown beside it, not judged.
func Checks(res *Results) []benchkit.Check {
	var checks []benchkit.Check
	for _, c := range res.Comparisons {
		scenario := fmt.Sprintf("%s, synchronous: %d", c.Workload, c.Synchronous)
		switch {
		case c.Subject == oursDirect.String() && c.Reference == byHandPrimary.String():
			checks = append(checks,
				ratioCheck(scenario, fmt.Sprintf("TPS ours (primary's address) ÷ by hand: median ≥ %g", tpsTarget), c.TPSRatios, c.MedianTPSRatio, func(v float64) bool { return v >= tpsTarget }),
				ratioCheck(scenario, fmt.Sprintf("p99 latency ours (primary's address) ÷ by hand: median ≤ %g", p99Target), c.P99Ratios, c.MedianP99Ratio, func(v float64) bool { return v <= p99Target }))
		case c.Subject == oursService.String() && c.Reference == byHandPrimary.String():
			checks = append(checks, benchkit.Check{Scenario: scenario, Target: "TPS and p99 ours (through the -rw Service's loopback proxy) ÷ by hand (no target: the simulation's proxy)",
				Figure: "TPS " + ratiosFigure(c.TPSRatios, c.MedianTPSRatio) + "; p99 " + ratiosFigure(c.P99Ratios, c.MedianP99Ratio), Met: "n/a (no target)"})
		}
	}
	return checks
}

// ratioCheck judges a median of ratios; a round without its figure
// leaves it not judged.
func ratioCheck(scenario, target string, ratios []*float64, median *float64, meets func(float64) bool) benchkit.Check {
	c := benchkit.Check{Scenario: scenario, Target: target, Figure: ratiosFigure(ratios, median)}
	if median == nil {
		c.Met = benchkit.NotJudged("a round lacks a run's figure")
		return c
	}
	c.Met = benchkit.YesNo(meets(*median))
	return c
}

// ratiosFigure is the median and each round's ratio.
func ratiosFigure(ratios []*float64, median *float64) string {
	each := make([]string, len(ratios))
	for i, r := range ratios {
		each[i] = optional(r)
	}
	return fmt.Sprintf("median %s (rounds: %s)", optional(median), strings.Join(each, ", "))
}

// optional is v to three decimals, or "—".
func optional(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *v)
}
