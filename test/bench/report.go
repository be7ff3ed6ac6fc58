package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"sort"
	"strings"
)

// check compares one measured figure with a target of the issue.
type check struct {
	Scenario string `json:"scenario"`
	N        int    `json:"n"`
	Target   string `json:"target"`
	Figure   string `json:"figure"`
	// Met is "yes", "no", or "n/a" with a reason; always computed from the
	// figures.
	Met string `json:"met"`
}

// ratioTarget is issue 11's bound on operator ÷ ceiling.
const ratioTarget = 1.3

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func fmtRatio(r *float64, op, ceiling waitResult) (string, string) {
	switch {
	case op.Target == 0:
		return "operator not measured", "n/a (the operator phase failed)"
	case r != nil:
		return fmt.Sprintf("%.2f× (%.2f s ÷ %.2f s)", *r, op.Seconds, ceiling.Seconds), yesNo(*r <= ratioTarget)
	case !op.ok():
		return "operator " + op.String(), "no"
	default:
		return "ceiling " + ceiling.String(), "n/a (no ceiling figure)"
	}
}

// judgeOnMedian judges a ratio on the median of the rounds, when there are
// several, and shows the last round's figure after it. Without a median (a
// round failed or timed out) the verdict is the last round's, unless an
// extra round's operator did not finish.
func judgeOnMedian(rounds *roundsResult, pick func(roundResult) *float64, lastFigure, lastMet string) (string, string) {
	if rounds == nil || len(rounds.Rounds) < 2 {
		return lastFigure, lastMet
	}
	all := ratioList(rounds.Rounds, pick)
	m := rounds.medianOf(pick)
	if m == nil {
		for _, r := range rounds.Rounds {
			if !r.OperatorExist.ok() || !r.OperatorReady.ok() {
				lastMet = "no"
			}
		}
		return fmt.Sprintf("no median of %d rounds (%s); last round %s", len(rounds.Rounds), all, lastFigure), lastMet
	}
	return fmt.Sprintf("median %.2f× of %d rounds (%s); last round %s", *m, len(rounds.Rounds), all, lastFigure), yesNo(*m <= ratioTarget)
}

func computeChecks(res *results) []check {
	var checks []check
	add := func(scenario string, n int, target, figure, met string) {
		checks = append(checks, check{scenario, n, target, figure, met})
	}
	for _, r := range res.Runs {
		// Figures that depend on pods staying ready mean nothing once the
		// node lifecycle controller marked pods not ready.
		readiness := func(met string) string {
			if len(r.ClusterHealth) > 0 {
				return met + " (invalid: pods were marked not ready, see cluster health)"
			}
			return met
		}
		roundsReadiness := func(met string) string {
			if rounds := r.Rounds.podsMarkedNotReady(); rounds != "" {
				return readiness(met + " (invalid: pods were marked not ready in round " + rounds + ")")
			}
			return readiness(met)
		}
		if b := r.Burst; b != nil && r.Ceiling != nil {
			fig, met := fmtRatio(b.ExistRatio, b.Exist, r.Ceiling.Exist)
			fig, met = judgeOnMedian(r.Rounds, func(r roundResult) *float64 { return r.ExistRatio }, fig, met)
			add("burst", r.N, "Deployments and Services exist within 1.3× of the ceiling", fig, met)
			fig, met = fmtRatio(b.ReadyRatio, b.Ready, r.Ceiling.Available)
			fig, met = judgeOnMedian(r.Rounds, func(r roundResult) *float64 { return r.ReadyRatio }, fig, met)
			add("burst", r.N, "Ready within 1.3× of the ceiling's Available", fig, roundsReadiness(met))
		}
		if b := r.Burst; b != nil && r.CeilingDeployments != nil {
			fig, _ := fmtRatio(b.DeploymentsRatio, b.DeploymentsExist, r.CeilingDeployments.DeploymentsExist)
			add("burst", r.N, "Deployments exist, against the ceiling creating Deployments alone (no target)", fig, "n/a (for comparison)")
		}
		if sc := r.Scripted; sc != nil && r.Ceiling != nil {
			fig, _ := fmtRatio(sc.ReadyRatio, sc.Ready, r.Ceiling.Available)
			fig, _ = judgeOnMedian(r.Rounds, func(r roundResult) *float64 { return r.ScriptedReadyRatio }, strings.Replace(fig, "operator ", "scripted client ", 1), "")
			add("scripted", r.N, "the work allowed per Website, done by a plain client without an operator: Ready ÷ the ceiling's Available (a reference for the burst's ratio, not a bound; no target)",
				fig, roundsReadiness("n/a (for comparison)"))
		}
		if b, sc := r.Burst, r.Scripted; b != nil && sc != nil {
			exist, _ := fmtRatio(b.ScriptedExistRatio, b.Exist, sc.Exist)
			ready, _ := fmtRatio(b.ScriptedReadyRatio, b.Ready, sc.Ready)
			ready, _ = judgeOnMedian(r.Rounds, func(r roundResult) *float64 { return r.OperatorScriptedRatio }, ready, "")
			add("burst", r.N, "operator ÷ the scripted client doing the same work: Ready; children exist (no target)", ready+"; exist "+exist, roundsReadiness("n/a (for comparison)"))
		}
		if c := r.Cost; c != nil && res.has("cost") {
			// Issue 11's target: one write per child, at most two status
			// writes and one event per Website, no read that bypasses the
			// cache. The writes are averages over the N Websites; the
			// reads are the operator's own count of children read past
			// the cache; all its GETs (its client metrics, which do not
			// say what for: the lease's are among them) are shown too.
			w := c.PerWebsite
			add("cost", r.N, "per Website on create: 1 write per child, ≤ 2 status writes, ≤ 1 event, no child read past the cache (averages; all the operator's GETs shown, not judged)",
				fmt.Sprintf("deployments %.3f, services %.3f, status %.3f, operator events %.3f, websites %.3f; children read past the cache %g; operator GETs per Website %.3f",
					w.Deployments, w.Services, w.WebsitesStatus, c.EventsPerWebsite, w.Websites, sumValues(c.ChildReads), c.OperatorRequestsPerWebsite["GET"]),
				yesNo(c.withinBudget()))
			if i := c.Idle; i != nil {
				total := i.Total + float64(i.OperatorEvents)
				add("cost", r.N, fmt.Sprintf("0 writes in %.0f s idle", i.Seconds),
					fmt.Sprintf("%g (%g to websites, deployments, services + %d events)", total, i.Total, i.OperatorEvents), readiness(yesNo(total == 0)))
			}
		}
		if rs := r.Restart; rs != nil {
			total := rs.Total + float64(rs.OperatorEvents)
			add("restart", r.N, "0 writes after a restart (the new Website's own excluded)",
				fmt.Sprintf("%g (%g to websites, deployments, services + %d events; %d changes of existing Websites)", total, rs.Total, rs.OperatorEvents, rs.ExistingStatusChanges),
				yesNo(total == 0 && rs.InitialPass.ok()))
			add("restart", r.N, "≤ 2 status writes for a Website created right after a restart, until Ready",
				fmt.Sprintf("%g (Ready after %s)", rs.NewWebsiteOwn.WebsitesStatus, rs.NewWebsiteReady), yesNo(rs.NewWebsiteOwn.WebsitesStatus <= 2 && rs.NewWebsiteReady.ok()))
		}
		for _, d := range r.Drift {
			fig := fmt.Sprintf("p99 %.3f s (p50 %.3f s, %d samples, %d timeouts)", d.P99, d.P50, len(d.Samples), d.Timeouts)
			add("drift", r.N, fmt.Sprintf("%s %s restored with p99 < 1 s", d.Kind, shortAction(d.Action)), fig,
				yesNo(len(d.Samples) > 0 && d.Timeouts == 0 && d.Errors == 0 && d.P99 < 1))
		}
		if r.Footprint.RSSSamples > 0 {
			limit := map[int]float64{1000: 64, 5000: 150}[r.N]
			fig := fmt.Sprintf("%.1f MiB (%.1f anonymous + %.1f file-backed)", r.Footprint.PeakRSSMiB, r.Footprint.AnonAtPeakMiB, r.Footprint.FileAtPeakMiB)
			if limit > 0 {
				add("footprint", r.N, fmt.Sprintf("peak RSS ≤ %.0f MiB", limit), fig, yesNo(r.Footprint.PeakRSSMiB <= limit))
			} else {
				add("footprint", r.N, "peak RSS (targets at N=1000 and 5000 only)", fig, "n/a (no target at this N)")
			}
		}
	}
	return checks
}

func shortAction(a string) string {
	if a == "delete" {
		return "deleted"
	}
	return "image changed"
}

func (res *results) has(scenario string) bool {
	for _, s := range res.Scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}

func markdown(res *results) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := res.Machine
	p("# Website operator benchmarks\n\n")
	p("Generated by `test/bench` (issues 6 and 11). Every figure below is measured in this run unless marked otherwise.\n\n")
	p("- Command: `%s`\n", res.CommandLine)
	p("- Started %s, finished %s\n", res.Started.Format("2006-01-02 15:04:05 MST"), res.Finished.Format("2006-01-02 15:04:05 MST"))
	p("- Machine: %d CPUs (%s), %d MiB, Linux %s, load average at start %s; %s %s/%s\n", m.NProc, m.CPUModel, m.MemTotalMiB, m.Kernel, m.LoadAvg, m.GoVersion, m.GOOS, m.GOARCH)
	p("- Operator: `%s` (%s), extra flags: `%s`\n", res.Operator.Binary, res.Operator.Version, strings.Join(res.Operator.Args, " "))
	p("- The operator's client and workers (from its own option parsing): %s\n", res.Operator.Client)
	p("- The client creating the Websites and the ceilings' children: %s\n", res.Load)
	p("- Scenarios: %s; N: %v\n\n", strings.Join(res.Scenarios, ", "), res.Ns)

	p("## Targets\n\n| Scenario | N | Target | Measured | met? |\n|---|---:|---|---|---|\n")
	for _, c := range res.Checks {
		p("| %s | %d | %s | %s | %s |\n", c.Scenario, c.N, c.Target, c.Figure, c.Met)
	}
	p("\n")

	p("## Burst\n\n")
	p("N Websites created at once by the load client; the ceilings create (POST) the same N Deployments, alone and then with the N Services, directly with the same client, each phase on a fresh cluster of the same size. ")
	p("\"Exist\": every object exists. Operator \"Ready\" is compared with the ceiling's \"Available\".\n\n")
	p("| N | ceiling: Deployments alone exist / Available | ceiling: Deployments and Services exist | operator: exist | ratio | ceiling: Available | operator: Ready | ratio | operator: Deployments exist | ÷ Deployments alone | operator start (readyz) | Website create calls |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		b, c, cd := r.Burst, r.Ceiling, r.CeilingDeployments
		if b == nil {
			continue
		}
		ce, ca, cds := "—", "—", "—"
		if c != nil {
			ce, ca = c.Exist.String(), c.Available.String()
		}
		if cd != nil {
			cds = cd.DeploymentsExist.String() + " / " + cd.Available.String()
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f s | %.2f s |\n", r.N, cds, ce, b.Exist, ratioStr(b.ExistRatio), ca, b.Ready, ratioStr(b.ReadyRatio),
			b.DeploymentsExist, ratioStr(b.DeploymentsRatio), b.OperatorStartSeconds, b.CreateCallsSeconds)
	}
	if res.anyRun(func(r *runResult) bool { return r.Rounds != nil }) {
		p("\nEvery round of the ceiling (Deployments and Services), the scripted client when it ran and the operator's burst, each on fresh clusters, the last being the run above; the ratio targets are judged on the medians:\n\n")
		p("| N | round | ceiling: exist | operator: exist | ratio | ceiling: Available | operator: Ready | ratio | scripted client: Ready | ÷ ceiling's Available | operator ÷ scripted |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.Runs {
			if r.Rounds == nil {
				continue
			}
			for i, round := range r.Rounds.Rounds {
				scripted := "—"
				if round.ScriptedReady.Target > 0 {
					scripted = round.ScriptedReady.String()
				}
				p("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.N, i+1, round.Ceiling, round.OperatorExist, ratioStr(round.ExistRatio),
					round.CeilingAvailable, round.OperatorReady, ratioStr(round.ReadyRatio), scripted, ratioStr(round.ScriptedReadyRatio), ratioStr(round.OperatorScriptedRatio))
			}
			p("| %d | median | | | **%s** | | | **%s** | | **%s** | **%s** |\n", r.N, ratioStr(r.Rounds.ExistRatio), ratioStr(r.Rounds.ReadyRatio),
				ratioStr(r.Rounds.ScriptedReadyRatio), ratioStr(r.Rounds.OperatorScriptedRatio))
		}
	}
	for _, r := range res.Runs {
		if r.Burst != nil && r.Burst.ReadyLag != nil {
			l := r.Burst.ReadyLag
			p("\nN=%d, how long each Website's status lagged behind the truth: from its Deployment seen available to the Website seen Ready (its Service's endpoints included), over %d Websites: p50 %.3f s, p99 %.3f s, max %.3f s.",
				r.N, l.Samples, l.P50, l.P99, l.Max)
		}
	}
	for _, r := range res.Runs {
		if sp := r.Services; sp != nil {
			p("\nN=%d, services scenario, %d creates with 1 worker / %d workers on the bare cluster: ClusterIP Services %.2f s / %.2f s, headless Services %.2f s / %.2f s, ConfigMaps %.2f s / %.2f s.",
				r.N, sp.Count, sp.Workers, sp.ServicesOne, sp.ServicesMany, sp.HeadlessOne, sp.HeadlessMany, sp.ConfigMapsOne, sp.ConfigMapsMany)
		}
	}
	for _, r := range res.Runs {
		if sc := r.Scripted; sc != nil {
			p("\nN=%d, scripted client (the work issue 11 allows an operator per Website, done without an operator: the load client creates the Websites, and as many workers as the operator has create each one's Deployment and Service, a status and an event, then the Ready status once the Deployment is Available): children exist %s (÷ ceiling %s), Deployments Available %s, Websites Ready %s (÷ the ceiling's Available %s)",
				r.N, sc.Exist, ratioStr(sc.ExistRatio), sc.Available, sc.Ready, ratioStr(sc.ReadyRatio))
			if b := r.Burst; b != nil {
				p("; the operator ÷ the scripted client: exist %s, Ready %s", ratioStr(b.ScriptedExistRatio), ratioStr(b.ScriptedReadyRatio))
			}
			if r.Ceiling != nil {
				if w := controlPlaneRatio(sc.CPUSeconds, r.Ceiling.CPUSeconds); w > 0 {
					p("; its control plane CPU ÷ the ceiling's: %.2f×", w)
				}
			}
			if sc.CreateErrors != 0 || sc.WorkErrors != 0 {
				p("; %d Website create errors, %d Websites whose other writes failed (-1: unfinished), first: %s", sc.CreateErrors, sc.WorkErrors, sc.FirstError)
			}
			p(".")
		}
	}
	p("\nThe machine is shared: other processes take a varying part of it during each phase (CPU table below), which moves the wall-clock ratios. ")
	p("The work moves much less with the load: CPU-seconds of the control plane and the operator during the operator's burst ÷ CPU-seconds of the control plane during the ceiling's (Deployments and Services):")
	for _, r := range res.Runs {
		if r.Burst != nil && r.Ceiling != nil {
			if w := cpuWorkRatio(r.Burst.CPUSeconds, r.Ceiling.CPUSeconds); w > 0 {
				p(" N=%d: **%.2f×** (the control plane alone, without the operator's own CPU: %.2f×);", r.N, w, controlPlaneRatio(r.Burst.CPUSeconds, r.Ceiling.CPUSeconds))
			}
		}
	}
	p("\n")
	p("\nFor comparison, **quoted from issue 11, not measured by this program** (the tutorial's kopf operator, which makes only a Deployment and an event per Website): ")
	p("all Deployments existed / were Available after 3.4 s / 3.6 s at N=100, 38.3 s / 38.5 s at N=1000, 161.3 s / 161.6 s at N=5000; peak RSS 85, 224, 764 MiB.\n\n")

	p("CPU seconds during the burst (user+system, from /proc):\n\n")
	cpuTable(&b, res, []string{"ceiling (Deployments alone)", "ceiling (Deployments and Services)", scriptedName, "operator burst"})

	if res.has("cost") && res.anyRun(func(r *runResult) bool { return r.Cost != nil }) {
		p("## API cost\n\nWrite requests counted by kube-apiserver (`apiserver_request_total`), per Website, from the first create until the writes stopped after every Website was Ready.\n\n")
		p("| N | websites | websites/status | deployments | services | subtotal | operator events | total | events by all writers | window |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.Runs {
			c := r.Cost
			if c == nil {
				continue
			}
			w := c.PerWebsite
			p("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | **%.2f** | %.2f | %.0f s |\n", r.N, w.Websites, w.WebsitesStatus, w.Deployments, w.Services, c.ChildrenPerWebsite, c.EventsPerWebsite, c.TotalPerWebsite, w.EventsAll, c.CreateWindowSeconds)
		}
		p("\n")
		for _, r := range res.Runs {
			if c := r.Cost; c != nil {
				p("- N=%d: %.2f reconciles per Website; the operator's own requests per Website by method (its client metrics: reads included, leader election included) %v; operator events by reason %v; events in the namespace by reporting controller %v", r.N, c.ReconcilesPerWebsite, c.OperatorRequestsPerWebsite, c.OperatorEvents.ByReason, c.EventsByController)
				if r.Ceiling != nil {
					p("; the ceiling phase saw %.0f writes to the main deployments resource beyond its own applies (kube-controller-manager), and %.0f event writes without any operator", r.Ceiling.KCMDeploymentMainWrites, r.Ceiling.EventWritesNonOperator)
				}
				p(".\n")
			}
		}
		p("\n### Idle\n\n| N | window | websites | websites/status | deployments | services | operator events | all writes in the window |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, r := range res.Runs {
			if r.Cost == nil || r.Cost.Idle == nil {
				continue
			}
			i := r.Cost.Idle
			p("| %d | %.0f s | %g | %g | %g | %g | %d | %s |\n", r.N, i.Seconds, i.Writes.Websites, i.Writes.WebsitesStatus, i.Writes.Deployments, i.Writes.Services, i.OperatorEvents, rawStr(i.Raw))
		}
		p("\n")
	}

	if res.anyRun(func(r *runResult) bool { return r.Restart != nil }) {
		p("## Restart\n\nThe operator is stopped with SIGTERM and started again with N Websites present; a new Website is created as soon as /readyz answers.\n\n")
		p("| N | stop | readyz after start | readyz after SIGTERM | new Website Ready after its creation | all Websites reconciled (from SIGTERM) | writes in the window | the new Website's own | restart's own writes | existing Websites: changes seen / events | the new process's requests by method |\n")
		p("|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|\n")
		for _, r := range res.Runs {
			rs := r.Restart
			if rs == nil {
				continue
			}
			requests := "—"
			if rs.OperatorClientRequests != nil {
				requests = fmt.Sprintf("%v; children read past the cache %v", rs.OperatorClientRequests, rs.ChildReads)
			}
			p("| %d | %.2f s | %.2f s | %.2f s | %s | %s | %s (%.0f s) | %s | **%g** | %d / %d | %s |\n", r.N, rs.StopSeconds, rs.ReadyzSeconds, rs.ReadyzFromStopSeconds, rs.NewWebsiteReady,
				rs.InitialPass, writesStr(rs.Window), rs.WindowSeconds, writesStr(rs.NewWebsiteOwn), rs.Total, rs.ExistingStatusChanges, rs.OperatorEvents, requests)
		}
		p("\n")
	}

	if res.anyRun(func(r *runResult) bool { return len(r.Drift) > 0 }) {
		p("## Drift\n\nTime from the change to the moment the restored object was seen.\n\n| N | child | change | samples | p50 | p99 | max | timeouts (30 s) | errors |\n|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.Runs {
			for _, d := range r.Drift {
				p("| %d | %s | %s | %d | %.3f s | %.3f s | %.3f s | %d | %d |\n", r.N, d.Kind, d.Action, len(d.Samples), d.P50, d.P99, d.Max, d.Timeouts, d.Errors)
			}
		}
		p("\n")
	}

	p("## Footprint\n\n| N | operator peak RSS (200 ms samples) | of which anonymous / file-backed | peak anonymous RSS | VmHWM per process | operator CPU, whole run | heap in use after burst | goroutines after burst |\n|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, r := range res.Runs {
		f := r.Footprint
		heap, gor := "—", "—"
		if r.Burst != nil && r.Burst.Operator.HeapInuseMiB > 0 {
			heap = fmt.Sprintf("%.1f MiB", r.Burst.Operator.HeapInuseMiB)
			gor = fmt.Sprintf("%.0f", r.Burst.Operator.Goroutines)
		}
		hwm := make([]string, len(f.HWMMiB))
		for i, h := range f.HWMMiB {
			hwm[i] = fmt.Sprintf("%.1f MiB", h)
		}
		p("| %d | %.1f MiB (%d samples) | %.1f / %.1f MiB | %.1f MiB | %s | %.2f s | %s | %s |\n", r.N, f.PeakRSSMiB, f.RSSSamples, f.AnonAtPeakMiB, f.FileAtPeakMiB, f.PeakAnonMiB, strings.Join(hwm, ", "), f.OperatorCPUSeconds, heap, gor)
	}
	p("\nCPU seconds per phase and process (the control plane next to the operator):\n\n")
	cpuTable(&b, res, nil)
	p("Heap profile: %s.\n\n", res.HeapProfile)
	for _, r := range res.Runs {
		if len(r.Footprint.HeapTop) == 0 {
			continue
		}
		p("N=%d, heap in use after the burst (`%s`, `go tool pprof -top -sample_index=inuse_space`):\n\n```\n%s\n```\n\n", r.N, r.Footprint.HeapProfile, strings.Join(r.Footprint.HeapTop, "\n"))
	}

	p("## Charts\n\n![time to Ready and ceiling time to Available against N](time-to-ready.svg)\n\n")
	for _, r := range res.Runs {
		if r.Burst != nil {
			p("![Websites Ready and ceiling Deployments Available over time, N=%d](%s)\n\n", r.N, overTimeFile(r.N))
		}
	}

	var errs []string
	for _, r := range res.Runs {
		for _, h := range r.ClusterHealth {
			errs = append(errs, fmt.Sprintf("N=%d: cluster health: %s", r.N, h))
		}
		for _, e := range r.Errors {
			errs = append(errs, fmt.Sprintf("N=%d: %s", r.N, firstLine(e)))
		}
	}
	if len(errs) > 0 {
		p("## Errors and cluster health\n\n")
		for _, e := range errs {
			p("- %s\n", e)
		}
		p("\n")
	}
	p("## Method\n\n")
	for _, n := range res.Notes {
		p("- %s\n", n)
	}
	p("- Raw figures, timestamps of each phase and the API server's write requests by verb and resource are in results.json.\n")
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (res *results) anyRun(f func(*runResult) bool) bool {
	for _, r := range res.Runs {
		if f(r) {
			return true
		}
	}
	return false
}

func ratioStr(r *float64) string {
	if r == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f×", *r)
}

func writesStr(w operatorWrites) string {
	return fmt.Sprintf("%g websites, %g status, %g deployments, %g services", w.Websites, w.WebsitesStatus, w.Deployments, w.Services)
}

func rawStr(c requestCounts) string {
	if len(c) == 0 {
		return "none"
	}
	return "`" + strings.Join(c.sorted(), " ") + "`"
}

// cpuTable writes a table of CPU seconds, one row per N and phase, one
// column per process.
func cpuTable(b *strings.Builder, res *results, phases []string) {
	procSet := map[string]bool{}
	for _, r := range res.Runs {
		for ph, procs := range r.Footprint.CPUSeconds {
			if phases != nil && !containsStr(phases, ph) {
				continue
			}
			for p := range procs {
				procSet[p] = true
			}
		}
	}
	if len(procSet) == 0 {
		b.WriteString("(none measured)\n\n")
		return
	}
	delete(procSet, machineName)
	delete(procSet, wallName)
	order := []string{operatorName, "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", benchName}
	var procs []string
	for _, p := range order {
		if procSet[p] {
			procs = append(procs, p)
			delete(procSet, p)
		}
	}
	var rest []string
	for p := range procSet {
		rest = append(rest, p)
	}
	sort.Strings(rest)
	procs = append(procs, rest...)
	fmt.Fprintf(b, "| N | phase | seconds | %s | control plane total | other processes on the machine | machine busy (of %d CPUs × seconds) |\n|---:|---|---:|%s---:|---:|---:|\n", strings.Join(procs, " | "), res.Machine.NProc, strings.Repeat("---:|", len(procs)))
	phaseOrder := []string{"ceiling (Deployments alone)", "ceiling (Deployments and Services)", scriptedName, "operator burst", "idle", "restart", "drift"}
	for _, r := range res.Runs {
		for _, ph := range phaseOrder {
			cpu, ok := r.Footprint.CPUSeconds[ph]
			if !ok || (phases != nil && !containsStr(phases, ph)) {
				continue
			}
			wall := cpu[wallName]
			cells := make([]string, len(procs))
			cp, ours := 0.0, 0.0
			for i, p := range procs {
				v, ok := cpu[p]
				if !ok {
					cells[i] = "—"
					continue
				}
				cells[i] = fmt.Sprintf("%.1f", v)
				ours += v
				if p != operatorName && p != benchName {
					cp += v
				}
			}
			others, busy := "—", "—"
			if m, ok := cpu[machineName]; ok {
				others = fmt.Sprintf("%.1f", max(0, m-ours))
				busy = fmt.Sprintf("%.1f of %.0f", m, wall*float64(res.Machine.NProc))
			}
			fmt.Fprintf(b, "| %d | %s | %.0f | %s | %.1f | %s | %s |\n", r.N, ph, wall, strings.Join(cells, " | "), cp, others, busy)
		}
	}
	b.WriteString("\n")
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// summary is what the benchmark prints at the end.
func summary(res *results) string {
	var b strings.Builder
	b.WriteString("\n== Results\n")
	for _, c := range res.Checks {
		fmt.Fprintf(&b, "%-9s N=%-5d %-70s %-60s met? %s\n", c.Scenario, c.N, c.Target, c.Figure, c.Met)
	}
	for _, r := range res.Runs {
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "N=%d error: %s\n", r.N, firstLine(e))
		}
	}
	return b.String()
}

// chart draws time-to-Ready and the ceiling's time-to-Available against N,
// with the times until the children existed dashed.
func chart(res *results) string {
	type series struct {
		name, color string
		dashed      bool
		points      [][2]float64
	}
	ss := []*series{
		{name: "operator: all Websites Ready", color: "#1f77b4"},
		{name: "ceiling: all Deployments Available", color: "#ff7f0e"},
		{name: "operator: all children exist", color: "#1f77b4", dashed: true},
		{name: "ceiling: all children exist", color: "#ff7f0e", dashed: true},
	}
	for _, r := range res.Runs {
		n := float64(r.N)
		if b := r.Burst; b != nil {
			if b.Ready.ok() {
				ss[0].points = append(ss[0].points, [2]float64{n, b.Ready.Seconds})
			}
			if b.Exist.ok() {
				ss[2].points = append(ss[2].points, [2]float64{n, b.Exist.Seconds})
			}
		}
		if c := r.Ceiling; c != nil {
			if c.Available.ok() {
				ss[1].points = append(ss[1].points, [2]float64{n, c.Available.Seconds})
			}
			if c.Exist.ok() {
				ss[3].points = append(ss[3].points, [2]float64{n, c.Exist.Seconds})
			}
		}
	}
	const width, height = 800.0, 440.0
	const left, right, top, bottom = 70.0, 300.0, 40.0, 60.0
	plotW, plotH := width-left-right, height-top-bottom
	minN, maxN, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, pt := range s.points {
			minN, maxN, maxY = math.Min(minN, pt[0]), math.Max(maxN, pt[0]), math.Max(maxY, pt[1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">Time to Ready (operator) and to Available (raw-client ceiling) against N</text>`+"\n", left)
	if math.IsInf(minN, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no completed burst measurement</text></svg>`+"\n", left, top+plotH/2)
		return b.String()
	}
	// x: logarithmic in N when N spans more than one value.
	logScale := maxN > minN
	xOf := func(n float64) float64 {
		if !logScale {
			return left + plotW/2
		}
		lo, hi := math.Log10(minN), math.Log10(maxN)
		pad := (hi - lo) * 0.08
		return left + (math.Log10(n)-lo+pad)/(hi-lo+2*pad)*plotW
	}
	yMax := niceCeil(maxY * 1.1)
	yOf := func(v float64) float64 { return top + plotH - v/yMax*plotH }
	// Axes and grid.
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, trimFloat(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, top+plotH)
	seen := map[float64]bool{}
	for _, s := range ss {
		for _, pt := range s.points {
			if seen[pt[0]] {
				continue
			}
			seen[pt[0]] = true
			x := xOf(pt[0])
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, top+plotH, x, top+plotH+5)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", x, top+plotH+18, pt[0])
		}
	}
	scale := "N (Websites)"
	if logScale {
		scale += ", logarithmic"
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+plotW/2, height-18, scale)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">seconds</text>`+"\n", top+plotH/2, top+plotH/2)
	// Series.
	for i, s := range ss {
		sort.Slice(s.points, func(a, c int) bool { return s.points[a][0] < s.points[c][0] })
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		if len(s.points) > 1 {
			var pts []string
			for _, pt := range s.points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(pt[0]), yOf(pt[1])))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		for _, pt := range s.points {
			x, y := xOf(pt[0]), yOf(pt[1])
			if s.dashed {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="white" stroke="%s" stroke-width="2"/>`+"\n", x-4, y-4, s.color)
			} else {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s"/>`+"\n", x, y, s.color)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%.1f s</text>`+"\n", x+8, y-6, s.color, pt[1])
		}
		// Legend.
		ly := top + 10 + float64(i)*22
		lx := left + plotW + 20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Load and ceiling: %s</text>`+"\n", left+plotW+20, top+110, html.EscapeString(res.Load.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Operator: %s</text>`+"\n", left+plotW+20, top+142, html.EscapeString(res.Operator.Client.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">%d CPUs, %s</text>`+"\n", left+plotW+20, top+126, res.Machine.NProc, html.EscapeString(res.Started.Format("2006-01-02")))
	b.WriteString("</svg>\n")
	return b.String()
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func overTimeFile(n int) string { return fmt.Sprintf("ready-over-time-n%d.svg", n) }

// overTimeChart draws, for one N, how many Websites were Ready and how many
// of the ceiling's Deployments were Available over time since the first
// create, with the times their children existed dashed.
func overTimeChart(res *results, r *runResult) string {
	type series struct {
		name, color string
		dashed      bool
		w           waitResult
	}
	var ss []series
	if b := r.Burst; b != nil {
		ss = append(ss, series{"operator: Websites Ready", "#1f77b4", false, b.Ready},
			series{"operator: Deployments and Services exist", "#1f77b4", true, b.Exist})
	}
	if c := r.Ceiling; c != nil {
		ss = append(ss, series{"ceiling: Deployments Available", "#ff7f0e", false, c.Available},
			series{"ceiling: Deployments and Services exist", "#ff7f0e", true, c.Exist})
	}
	if c := r.CeilingDeployments; c != nil {
		ss = append(ss, series{"ceiling, Deployments alone: Available", "#2ca02c", false, c.Available},
			series{"ceiling, Deployments alone: exist", "#2ca02c", true, c.DeploymentsExist})
	}
	const width, height = 820.0, 440.0
	const left, right, top, bottom = 70.0, 320.0, 40.0, 60.0
	plotW, plotH := width-left-right, height-top-bottom
	maxX := 0.0
	for _, s := range ss {
		if len(s.w.Timeline) > 0 {
			maxX = math.Max(maxX, s.w.Timeline[len(s.w.Timeline)-1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">N = %d: share done against seconds since the first create</text>`+"\n", left, r.N)
	if maxX == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no timeline recorded (a run that did not complete, or results from before timelines)</text></svg>`+"\n", left, top+plotH/2)
		return b.String()
	}
	xMax := niceCeil(maxX * 1.05)
	xOf := func(v float64) float64 { return left + v/xMax*plotW }
	yOf := func(share float64) float64 { return top + plotH - share*plotH }
	for i := 0; i <= 4; i++ {
		share := float64(i) / 4
		y := yOf(share)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", left-6, y+4, share*100)
	}
	for i := 0; i <= 5; i++ {
		v := xMax * float64(i) / 5
		x := xOf(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, top+plotH, x, top+plotH+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+plotH+18, trimFloat(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, top+plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds since the first create</text>`+"\n", left+plotW/2, height-18)
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		if n := len(s.w.Timeline); n > 0 {
			pts := []string{fmt.Sprintf("%.1f,%.1f", xOf(0), yOf(0))}
			for k, t := range s.w.Timeline {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(t), yOf(float64(k+1)/float64(n))))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		ly := top + 10 + float64(i)*22
		lx := left + plotW + 20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s (%s)</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name), html.EscapeString(s.w.String()))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Load and ceiling: %s</text>`+"\n", left+plotW+20, top+160, html.EscapeString(res.Load.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Operator: %s</text>`+"\n", left+plotW+20, top+176, html.EscapeString(res.Operator.Client.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">%d CPUs, %s</text>`+"\n", left+plotW+20, top+192, res.Machine.NProc, html.EscapeString(res.Started.Format("2006-01-02")))
	b.WriteString("</svg>\n")
	return b.String()
}

// controlPlane are the processes of the local cluster in the CPU tables.
var controlPlane = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// cpuWorkRatio is the CPU-seconds of the control plane and the operator
// during the operator's burst over those of the control plane during the
// ceiling: how much more work the operator's way costs, whatever else ran
// on the machine. 0 when either is missing.
func cpuWorkRatio(burst, ceiling map[string]float64) float64 {
	return cpuRatio(burst, ceiling, append(slices.Clone(controlPlane), operatorName))
}

// controlPlaneRatio is cpuWorkRatio without the operator's own CPU: the
// extra work its requests and watches cause in the control plane. On a
// machine that the control plane keeps busy, the wall-clock ratios cannot
// go much below it however little CPU the operator itself uses.
func controlPlaneRatio(burst, ceiling map[string]float64) float64 {
	return cpuRatio(burst, ceiling, controlPlane)
}

// cpuRatio is the CPU-seconds of the processes named in the burst over
// those of the control plane in the ceiling; 0 when either is missing.
func cpuRatio(burst, ceiling map[string]float64, inBurst []string) float64 {
	sum := func(m map[string]float64, names []string) float64 {
		total := 0.0
		for _, n := range names {
			total += m[n]
		}
		return total
	}
	c := sum(ceiling, controlPlane)
	if c == 0 || len(burst) == 0 {
		return 0
	}
	return round3(sum(burst, inBurst) / c)
}
