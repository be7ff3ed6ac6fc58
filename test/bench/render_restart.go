package main

import "fmt"

// writeRestart renders how soon a restarted operator serves and what the
// restart writes.
func writeRestart(w *mdWriter, res *results) {
	if !res.anyRun(func(r *runResult) bool { return r.Restart != nil }) {
		return
	}
	w.P("## Restart\n\nThe operator is stopped with SIGTERM and started again with N Websites present; a new Website is created as soon as /readyz answers.\n\n")
	w.P("| N | stop | readyz after start | readyz after SIGTERM | new Website Ready after its creation | all Websites reconciled (from SIGTERM) | writes in the window | the new Website's own | restart's own writes | existing Websites: changes seen / events | the new process's requests by method |\n")
	w.P("|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|\n")
	for _, r := range res.Runs {
		rs := r.Restart
		if rs == nil {
			continue
		}
		requests := "—"
		if rs.OperatorClientRequests != nil {
			requests = fmt.Sprintf("%v; children read past the cache %v", rs.OperatorClientRequests, rs.ChildReads)
		}
		w.P("| %d | %.2f s | %.2f s | %.2f s | %s | %s | %s (%.0f s%s) | %s | **%g** | %d / %d | %s |\n", r.N, rs.StopSeconds, rs.ReadyzSeconds, rs.ReadyzFromStopSeconds, rs.NewWebsiteReady,
			rs.InitialPass, writesStr(rs.Window), rs.WindowSeconds, settleNote(rs.Settle), writesStr(rs.NewWebsiteOwn), rs.Total, rs.ExistingStatusChanges, rs.OperatorEvents, requests)
	}
	w.P("\n")
}
