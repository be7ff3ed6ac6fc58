package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"example.com/platform-operator/test/bench/benchkit"
)

// check compares one measured figure with a target of the issue.
type check = benchkit.Check

// computeChecks judges every target of every run, in the order the
// Targets table shows them.
func computeChecks(res *results) []check {
	var checks []check
	for _, r := range res.Runs {
		checks = append(checks, burstChecks(r)...)
		checks = append(checks, costChecks(res, r)...)
		checks = append(checks, restartChecks(r)...)
		checks = append(checks, driftChecks(r)...)
		checks = append(checks, footprintChecks(r)...)
	}
	return checks
}

// readinessValid marks a verdict that depends on pods staying ready as
// invalid once the node lifecycle controller marked pods not ready.
func readinessValid(r *runResult, met string) string {
	if len(r.ClusterHealth) > 0 {
		return met + " (invalid: pods were marked not ready, see cluster health)"
	}
	return met
}

// roundsReadinessValid is readinessValid for a verdict that depends on
// every round.
func roundsReadinessValid(r *runResult, met string) string {
	if rounds := r.Rounds.podsMarkedNotReady(); rounds != "" {
		return readinessValid(r, met+" (invalid: pods were marked not ready in round "+rounds+")")
	}
	return readinessValid(r, met)
}

// burstChecks are the burst's ratios to the ceiling and its comparisons
// with the scripted client.
func burstChecks(r *runResult) []check {
	var checks []check
	add := func(scenario, target, figure, met string) {
		checks = append(checks, check{Scenario: scenario, N: r.N, Target: target, Figure: figure, Met: met})
	}
	b, c := r.Burst, r.Ceiling
	if b != nil && c != nil {
		exist := func(round roundResult) ratioSides {
			return ratioSides{round.OperatorExist, round.Ceiling, round.ExistRatio}
		}
		last := ratioSides{b.Exist, c.Exist, b.ExistRatio}
		add("burst", "Deployments and Services exist within 1.3× of the ceiling",
			ratioFigure(r.Rounds, exist, fmtRatio("operator", last)), judgeRatio(roundSides(r.Rounds, exist, last), ratioTarget).Met)
		ready := func(round roundResult) ratioSides {
			return ratioSides{round.OperatorReady, round.CeilingAvailable, round.ReadyRatio}
		}
		last = ratioSides{b.Ready, c.Available, b.ReadyRatio}
		add("burst", "Ready within 1.3× of the ceiling's Available",
			ratioFigure(r.Rounds, ready, fmtRatio("operator", last)), roundsReadinessValid(r, judgeRatio(roundSides(r.Rounds, ready, last), ratioTarget).Met))
	}
	if cd := r.CeilingDeployments; b != nil && cd != nil {
		add("burst", "Deployments exist, against the ceiling creating Deployments alone (no target)",
			fmtRatio("operator", ratioSides{b.DeploymentsExist, cd.DeploymentsExist, b.DeploymentsRatio}), "n/a (for comparison)")
	}
	if sc := r.Scripted; sc != nil && c != nil {
		ready := func(round roundResult) ratioSides {
			return ratioSides{round.ScriptedReady, round.CeilingAvailable, round.ScriptedReadyRatio}
		}
		add("scripted", "the work allowed per Website, done by a plain client without an operator: Ready ÷ the ceiling's Available (a reference for the burst's ratio, not a bound; no target)",
			ratioFigure(r.Rounds, ready, fmtRatio("scripted client", ratioSides{sc.Ready, c.Available, sc.ReadyRatio})), roundsReadinessValid(r, "n/a (for comparison)"))
	}
	if sc := r.Scripted; b != nil && sc != nil {
		exist := fmtRatio("operator", ratioSides{b.Exist, sc.Exist, b.ScriptedExistRatio})
		ready := func(round roundResult) ratioSides {
			return ratioSides{round.OperatorReady, round.ScriptedReady, round.OperatorScriptedRatio}
		}
		add("burst", "operator ÷ the scripted client doing the same work: Ready; children exist (no target)",
			ratioFigure(r.Rounds, ready, fmtRatio("operator", ratioSides{b.Ready, sc.Ready, b.ScriptedReadyRatio}))+"; exist "+exist, roundsReadinessValid(r, "n/a (for comparison)"))
	}
	checks = append(checks, kopfChecks(r)...)
	return checks
}

// Issue 33's bounds on the operator against the tutorial's kopf operator
// doing the same work.
const (
	kopfReadyTarget = 0.9
	kopfCPUTarget   = 0.7
	kopfRSSTarget   = 0.6
)

// kopfChecks judge the operator against the kopf peer, on the medians of
// the rounds.
func kopfChecks(r *runResult) []check {
	k, b := r.Kopf, r.Burst
	if k == nil || b == nil {
		return nil
	}
	var checks []check
	add := func(target, figure, met string) {
		checks = append(checks, check{Scenario: kopfScenario, N: r.N, Target: target, Figure: figure, Met: met})
	}
	ready := func(round roundResult) ratioSides {
		return ratioSides{round.OperatorReady, ptr.Deref(round.KopfAvailable, waitResult{}), round.KopfReadyRatio}
	}
	last := ratioSides{b.Ready, k.Available, ratio(b.Ready, k.Available)}
	add(fmt.Sprintf("every Website Ready ≤ %.1f× the time kopf doing the same work needs for every Deployment Available", kopfReadyTarget),
		ratioFigure(r.Rounds, ready, fmtRatio("operator", last)), roundsReadinessValid(r, judgeRatio(roundSides(r.Rounds, ready, last), kopfReadyTarget).Met))
	operatorHWM := 0.0
	if len(r.Footprint.HWMMiB) > 0 {
		operatorHWM = r.Footprint.HWMMiB[0]
	}
	for _, m := range []struct {
		what       string
		bound      float64
		pick       func(roundResult) *float64
		op, theirs float64
		unit       string
	}{
		{"operator CPU during the burst", kopfCPUTarget, func(r roundResult) *float64 { return r.KopfCPURatio }, b.CPUSeconds[operatorName], k.CPUSeconds, "s"},
		{"operator peak RSS (VmHWM)", kopfRSSTarget, func(r roundResult) *float64 { return r.KopfRSSRatio }, operatorHWM, k.HWMMiB, "MiB"},
	} {
		figure := fmt.Sprintf("last round %.1f %s ÷ %.1f %s", m.op, m.unit, m.theirs, m.unit)
		judged, label := plainRatio(m.op, m.theirs), "%.2f×; %s"
		if r.Rounds != nil && len(r.Rounds.Rounds) > 1 {
			judged, label = r.Rounds.medianOf(m.pick), "median %.2f×; %s"
			figure = fmt.Sprintf("rounds %s; %s", ratioList(r.Rounds.Rounds, m.pick), figure)
		}
		met := "not judged (a round lacks a figure)"
		if judged != nil {
			figure = fmt.Sprintf(label, *judged, figure)
			met = benchkit.YesNo(*judged <= m.bound)
		}
		add(fmt.Sprintf("%s ≤ %.1f× kopf's", m.what, m.bound), figure, met)
	}
	return checks
}

// costChecks are issue 11's budget of writes per Website on create and
// the idle window's writes.
func costChecks(res *results, r *runResult) []check {
	c := r.Cost
	if c == nil || !res.has("cost") {
		return nil
	}
	// Issue 11's target: one write per child, at most two status writes
	// and one event per Website, no read that bypasses the cache. The
	// writes are averages over the N Websites; the reads are the
	// operator's own count of children read past the cache; all its GETs
	// (its client metrics, which do not say what for: the lease's are
	// among them) are shown too.
	w := c.PerWebsite
	checks := []check{{Scenario: "cost", N: r.N, Target: "per Website on create: 1 write per child, ≤ 2 status writes, ≤ 1 event, no child read past the cache (averages; all the operator's GETs shown, not judged)",
		Figure: fmt.Sprintf("deployments %.3f, services %.3f, status %.3f, operator events %.3f, websites %.3f; children read past the cache %g; operator GETs per Website %.3f",
			w.Deployments, w.Services, w.WebsitesStatus, c.EventsPerWebsite, w.Websites, sumValues(c.ChildReads), c.OperatorRequestsPerWebsite["GET"]),
		Met: unsettledMet(c.Settle, benchkit.YesNo(c.withinBudget()))}}
	if i := c.Idle; i != nil {
		total := i.Total + float64(i.OperatorEvents)
		checks = append(checks, check{Scenario: "cost", N: r.N, Target: fmt.Sprintf("0 writes in %.0f s idle", i.Seconds),
			Figure: fmt.Sprintf("%g (%g to websites, deployments, services + %d events)", total, i.Total, i.OperatorEvents), Met: readinessValid(r, benchkit.YesNo(total == 0))})
	}
	return checks
}

// restartChecks are the writes a restart causes and those of a Website
// created right after it.
func restartChecks(r *runResult) []check {
	rs := r.Restart
	if rs == nil {
		return nil
	}
	total := rs.Total + float64(rs.OperatorEvents)
	return []check{
		{Scenario: "restart", N: r.N, Target: "0 writes after a restart (the new Website's own excluded)",
			Figure: fmt.Sprintf("%g (%g to websites, deployments, services + %d events; %d changes of existing Websites)", total, rs.Total, rs.OperatorEvents, rs.ExistingStatusChanges),
			Met:    unsettledMet(rs.Settle, benchkit.YesNo(total == 0 && rs.InitialPass.ok()))},
		{Scenario: "restart", N: r.N, Target: "≤ 2 status writes for a Website created right after a restart, until Ready",
			Figure: fmt.Sprintf("%g (Ready after %s)", rs.NewWebsiteOwn.WebsitesStatus, rs.NewWebsiteReady), Met: unsettledMet(rs.Settle, benchkit.YesNo(rs.NewWebsiteOwn.WebsitesStatus <= 2 && rs.NewWebsiteReady.ok()))},
	}
}

// driftChecks are the times until a changed child was restored.
func driftChecks(r *runResult) []check {
	var checks []check
	for _, d := range r.Drift {
		fig := fmt.Sprintf("p99 %.3f s (p50 %.3f s, %d samples, %d timeouts)", d.P99, d.P50, len(d.Samples), d.Timeouts)
		checks = append(checks, check{Scenario: "drift", N: r.N, Target: fmt.Sprintf("%s %s restored with p99 < 1 s", d.Kind, shortAction(d.Action)), Figure: fig, Met: benchkit.YesNo(len(d.Samples) > 0 && d.Timeouts == 0 && d.Errors == 0 && d.P99 < 1)})
	}
	return checks
}

func shortAction(a string) string {
	if a == "delete" {
		return "deleted"
	}
	return "image changed"
}

// rssTargetMiB are issue 11's bounds on the operator's peak RSS, by N.
var rssTargetMiB = map[int]float64{1000: 64, 5000: 150}

// footprintChecks judge the operator's peak RSS on VmHWM, the kernel's
// exact peak of each operator process: samples taken at intervals can miss
// a short peak.
func footprintChecks(r *runResult) []check {
	f := r.Footprint
	if f.RSSSamples == 0 && len(f.HWMMiB) == 0 {
		return nil
	}
	limit := rssTargetMiB[r.N]
	if limit == 0 {
		return []check{{Scenario: "footprint", N: r.N, Target: "peak RSS (targets at N=1000 and 5000 only)", Figure: footprintFigure(f), Met: "n/a (no target at this N)"}}
	}
	met := "not judged (no VmHWM recorded)"
	if peak, ok := f.exactPeakMiB(); ok {
		met = benchkit.YesNo(peak <= limit)
	}
	return []check{{Scenario: "footprint", N: r.N, Target: fmt.Sprintf("peak RSS (VmHWM) ≤ %.0f MiB", limit), Figure: footprintFigure(f), Met: met}}
}

// footprintFigure shows the exact peak, then what the samples saw.
func footprintFigure(f footprintResult) string {
	exact := "no VmHWM recorded"
	if peak, ok := f.exactPeakMiB(); ok {
		exact = fmt.Sprintf("VmHWM %.1f MiB", peak)
		if len(f.HWMMiB) > 1 {
			each := make([]string, len(f.HWMMiB))
			for i, h := range f.HWMMiB {
				each[i] = fmt.Sprintf("%.1f", h)
			}
			exact += fmt.Sprintf(" (the highest of the operator processes' %s MiB)", strings.Join(each, ", "))
		}
	}
	sampled := "sampled"
	if f.SampleEvery != "" {
		sampled += " every " + f.SampleEvery
	}
	return fmt.Sprintf("%s; %s: %.1f MiB (%.1f anonymous + %.1f file-backed)", exact, sampled, f.PeakRSSMiB, f.AnonAtPeakMiB, f.FileAtPeakMiB)
}

// exactPeakMiB is the highest VmHWM of the operator's processes, read just
// before each stopped; false when none was read.
func (f footprintResult) exactPeakMiB() (float64, bool) {
	if len(f.HWMMiB) == 0 {
		return 0, false
	}
	return slices.Max(f.HWMMiB), true
}

func (res *results) has(scenario string) bool {
	for _, s := range res.Scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}
