package main

// writeDrift renders the times until changed children were restored.
func writeDrift(w *mdWriter, res *results) {
	if !res.anyRun(func(r *runResult) bool { return len(r.Drift) > 0 }) {
		return
	}
	w.P("## Drift\n\nTime from the change to the moment the restored object was seen.\n\n| N | child | change | samples | p50 | p99 | max | timeouts (30 s) | errors |\n|---:|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		for _, d := range r.Drift {
			w.P("| %d | %s | %s | %d | %.3f s | %.3f s | %.3f s | %d | %d |\n", r.N, d.Kind, d.Action, len(d.Samples), d.P50, d.P99, d.Max, d.Timeouts, d.Errors)
		}
	}
	w.P("\n")
}
