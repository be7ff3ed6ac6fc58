package main

// writeKopf renders the kopf peer's runs beside the operator's bursts,
// every round of each N.
func writeKopf(w *mdWriter, res *results) {
	if !res.anyRun(func(r *runResult) bool { return r.Kopf != nil }) {
		return
	}
	w.P("## The tutorial's kopf operator doing the same work\n\n")
	w.P("kopf 1.44.6 running `%s` (a Deployment, a ClusterIP Service, an event and a status per Website), on a fresh cluster of its own in every round, before the operator's burst in odd rounds and after it in even ones; the same N Websites created by the same load client. Its Websites have no Ready condition: its time is until every Deployment is Available. The ratios are the operator's ÷ kopf's.\n\n", kopfHandlers)
	w.P("| N | round | kopf: every Deployment Available | operator: every Website Ready | ratio | CPU ratio | peak RSS ratio |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		if r.Kopf == nil {
			continue
		}
		rounds := []roundResult{roundOf(r)}
		if r.Rounds != nil && len(r.Rounds.Rounds) > 0 {
			rounds = r.Rounds.Rounds
		}
		for i, round := range rounds {
			available := "—"
			if round.KopfAvailable != nil {
				available = round.KopfAvailable.String()
			}
			w.P("| %d | %d | %s | %s | %s | %s | %s |\n", r.N, i+1, available, round.OperatorReady, ratioStr(round.KopfReadyRatio), ratioStr(round.KopfCPURatio), ratioStr(round.KopfRSSRatio))
		}
		k := r.Kopf
		w.P("| %d | last round's kopf | CPU %.1f s, VmHWM %.1f MiB, serving %.1f s after its start | | | | |\n", r.N, k.CPUSeconds, k.HWMMiB, k.StartSeconds)
	}
	w.P("\n")
}
