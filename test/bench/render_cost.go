package main

// writeCost renders the API server's writes per Website on create and in
// the idle window.
func writeCost(w *mdWriter, res *results) {
	if !res.has("cost") || !res.anyRun(func(r *runResult) bool { return r.Cost != nil }) {
		return
	}
	w.P("## API cost\n\nWrite requests counted by kube-apiserver (`apiserver_request_total`), per Website, from the first create until the writes stopped after every Website was Ready.\n\n")
	w.P("| N | websites | websites/status | deployments | services | subtotal | operator events | total | events by all writers | window |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		c := r.Cost
		if c == nil {
			continue
		}
		pw := c.PerWebsite
		w.P("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | **%.2f** | %.2f | %.0f s%s |\n", r.N, pw.Websites, pw.WebsitesStatus, pw.Deployments, pw.Services, c.ChildrenPerWebsite, c.EventsPerWebsite, c.TotalPerWebsite, pw.EventsAll, c.CreateWindowSeconds, settleNote(c.Settle))
	}
	w.P("\n")
	for _, r := range res.Runs {
		if c := r.Cost; c != nil {
			w.P("- N=%d: %.2f reconciles per Website; the operator's own requests per Website by method (its client metrics: reads included, leader election included) %v; operator events by reason %v; events in the namespace by reporting controller %v", r.N, c.ReconcilesPerWebsite, c.OperatorRequestsPerWebsite, c.OperatorEvents.ByReason, c.EventsByController)
			if r.Ceiling != nil {
				w.P("; the ceiling phase saw %.0f writes to the main deployments resource beyond its own applies (kube-controller-manager), and %.0f event writes without any operator", r.Ceiling.KCMDeploymentMainWrites, r.Ceiling.EventWritesNonOperator)
			}
			w.P(".\n")
		}
	}
	w.P("\n### Idle\n\n| N | window | websites | websites/status | deployments | services | operator events | all writes in the window |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range res.Runs {
		if r.Cost == nil || r.Cost.Idle == nil {
			continue
		}
		i := r.Cost.Idle
		w.P("| %d | %.0f s | %g | %g | %g | %g | %d | %s |\n", r.N, i.Seconds, i.Writes.Websites, i.Writes.WebsitesStatus, i.Writes.Deployments, i.Writes.Services, i.OperatorEvents, rawStr(i.Raw))
	}
	w.P("\n")
}
