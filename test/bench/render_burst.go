package main

import (
	"fmt"
	"strings"
)

// writeBurst renders the burst against the ceilings, every round, the
// notes on the burst and the CPU table of the phases compared.
func writeBurst(w *mdWriter, res *results, rep *report) {
	w.P("## Burst\n\n")
	w.P("N Websites created at once by the load client; the ceilings create (POST) the same N Deployments, alone and then with the N Services, directly with the same client, each phase on a fresh cluster of the same size. ")
	w.P("\"Exist\": every object exists. Operator \"Ready\" is compared with the ceiling's \"Available\".\n\n")
	writeBurstTable(w, res)
	if res.anyRun(func(r *runResult) bool { return r.Rounds != nil }) {
		writeRoundsTable(w, res)
	}
	writeBurstNotes(w, res, rep)
	w.P("\n")
	writePeers(w, res.Quoted, rep.Peers)
	w.P("CPU seconds during the burst (user+system, from /proc):\n\n")
	writeCPUTable(w, rep.BurstCPU)
}

func writeBurstTable(w *mdWriter, res *results) {
	w.P("| N | ceiling: Deployments alone exist / Available | ceiling: Deployments and Services exist | operator: exist | ratio | ceiling: Available | operator: Ready | ratio | operator: Deployments exist | ÷ Deployments alone | operator start (readyz) | Website create calls |\n")
	w.P("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
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
		w.P("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f s | %.2f s |\n", r.N, cds, ce, b.Exist, ratioStr(b.ExistRatio), ca, b.Ready, ratioStr(b.ReadyRatio),
			b.DeploymentsExist, ratioStr(b.DeploymentsRatio), b.OperatorStartSeconds, b.CreateCallsSeconds)
	}
}

func writeRoundsTable(w *mdWriter, res *results) {
	w.P("\nEvery round of the ceiling (Deployments and Services), the scripted client when it ran and the operator's burst, each on fresh clusters, the last being the run above; the ratio targets are judged on the medians:\n\n")
	w.P("| N | round | ceiling: exist | operator: exist | ratio | ceiling: Available | operator: Ready | ratio | scripted client: Ready | ÷ ceiling's Available | operator ÷ scripted |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		if r.Rounds == nil {
			continue
		}
		for i, round := range r.Rounds.Rounds {
			scripted := "—"
			if round.ScriptedReady.Target > 0 {
				scripted = round.ScriptedReady.String()
			}
			w.P("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.N, i+1, round.Ceiling, round.OperatorExist, ratioStr(round.ExistRatio),
				round.CeilingAvailable, round.OperatorReady, ratioStr(round.ReadyRatio), scripted, ratioStr(round.ScriptedReadyRatio), ratioStr(round.OperatorScriptedRatio))
		}
		w.P("| %d | median | | | **%s** | | | **%s** | | **%s** | **%s** |\n", r.N, ratioStr(r.Rounds.ExistRatio), ratioStr(r.Rounds.ReadyRatio),
			ratioStr(r.Rounds.ScriptedReadyRatio), ratioStr(r.Rounds.OperatorScriptedRatio))
	}
}

// writeBurstNotes renders, one line per N, the Websites' status lag, the
// services probe, the scripted client, and the CPU work of the burst
// against the ceiling's.
func writeBurstNotes(w *mdWriter, res *results, rep *report) {
	for _, r := range res.Runs {
		if r.Burst != nil && r.Burst.ReadyLag != nil {
			l := r.Burst.ReadyLag
			w.P("\nN=%d, how long each Website's status lagged behind the truth: from its Deployment seen available to the Website seen Ready (its Service's endpoints included), over %d Websites: p50 %.3f s, p99 %.3f s, max %.3f s.",
				r.N, l.Samples, l.P50, l.P99, l.Max)
		}
	}
	for _, r := range res.Runs {
		if sp := r.Services; sp != nil {
			w.P("\nN=%d, services scenario, %d creates with 1 worker / %d workers on the bare cluster: ClusterIP Services %.2f s / %.2f s, headless Services %.2f s / %.2f s, ConfigMaps %.2f s / %.2f s.",
				r.N, sp.Count, sp.Workers, sp.ServicesOne, sp.ServicesMany, sp.HeadlessOne, sp.HeadlessMany, sp.ConfigMapsOne, sp.ConfigMapsMany)
		}
	}
	for i, r := range res.Runs {
		if sc := r.Scripted; sc != nil {
			w.P("\nN=%d, scripted client (the work issue 11 allows an operator per Website, done without an operator: the load client creates the Websites, and as many workers as the operator has create each one's Deployment and Service, a status and an event, then the Ready status once the Deployment is Available): children exist %s (÷ ceiling %s), Deployments Available %s, Websites Ready %s (÷ the ceiling's Available %s)",
				r.N, sc.Exist, ratioStr(sc.ExistRatio), sc.Available, sc.Ready, ratioStr(sc.ReadyRatio))
			if b := r.Burst; b != nil {
				w.P("; the operator ÷ the scripted client: exist %s, Ready %s", ratioStr(b.ScriptedExistRatio), ratioStr(b.ScriptedReadyRatio))
			}
			if f := rep.Runs[i]; f.ScriptedControlPlane > 0 {
				w.P("; its control plane CPU ÷ the ceiling's: %.2f×", f.ScriptedControlPlane)
			}
			if sc.CreateErrors != 0 || sc.WorkErrors != 0 {
				w.P("; %d Website create errors, %d Websites whose other writes failed (-1: unfinished), first: %s", sc.CreateErrors, sc.WorkErrors, sc.FirstError)
			}
			w.P(".")
		}
	}
	w.P("\nThe machine is shared: other processes take a varying part of it during each phase (CPU table below), which moves the wall-clock ratios. ")
	w.P("The work moves much less with the load: CPU-seconds of the control plane and the operator during the operator's burst ÷ CPU-seconds of the control plane during the ceiling's (Deployments and Services):")
	for _, f := range rep.Runs {
		if f.CPUWork > 0 {
			w.P(" N=%d: **%.2f×** (the control plane alone, without the operator's own CPU: %.2f×);", f.N, f.CPUWork, f.ControlPlaneWork)
		}
	}
}

// writePeers renders the other operator's figures that results.json
// quotes, when it quotes any.
func writePeers(w *mdWriter, q *quotedKopf, rows []peerRow) {
	if q == nil || (len(rows) == 0 && q.RSSAnyN == 0) {
		w.P("\n")
		return
	}
	seconds := func(v *float64) string {
		if v == nil {
			return "—"
		}
		return fmt.Sprintf("%g s", *v)
	}
	var times, rss []string
	for _, r := range rows {
		if r.Exist != nil || r.Avail != nil {
			times = append(times, fmt.Sprintf("%s / %s at N=%d", seconds(r.Exist), seconds(r.Avail), r.N))
		}
		if r.RSSMiB != nil {
			rss = append(rss, fmt.Sprintf("%g MiB at N=%d", *r.RSSMiB, r.N))
		}
	}
	source := q.Source
	if source == "" {
		source = "no source recorded"
	}
	var parts []string
	if len(times) > 0 {
		parts = append(parts, "all Deployments existed / were Available after "+strings.Join(times, ", "))
	}
	if len(rss) > 0 {
		parts = append(parts, "peak RSS "+strings.Join(rss, ", "))
	}
	if q.RSSAnyN > 0 {
		parts = append(parts, fmt.Sprintf("RSS %g MiB (no N given)", q.RSSAnyN))
	}
	w.P("\nFor comparison, figures that this program **did not measure** (%s): %s.\n\n", source, strings.Join(parts, "; "))
}
