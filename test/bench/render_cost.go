package main

import (
	"cmp"
	"slices"

	"example.com/platform-operator/test/bench/benchkit"
)

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
	writeWatchTraffic(w, res)
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

// writeWatchTraffic renders, per Website, the watch events and bytes the
// API server sent its watchers during the burst, with the operator, and
// during the scripted phase, the same objects made by a plain client
// without one: the difference is what watching costs the control plane
// for the operator (its own watches, and the events of its larger
// children and of its status writes for every other watcher).
func writeWatchTraffic(w *mdWriter, res *results) {
	if !res.anyRun(func(r *runResult) bool { return r.Burst != nil && r.Burst.Watch != nil }) {
		return
	}
	w.P("\n### Watch traffic\n\nEvents (`apiserver_watch_events_total`) and bytes (`apiserver_watch_events_sizes`) the API server sent to every watcher, per Website, from the first create until every Website was Ready: in the operator's burst, and in the scripted phase (the same objects made by a plain client, no operator). Last round of each.\n\n")
	w.P("| N | resource | events: operator | events: scripted | bytes: operator | bytes: scripted |\n|---:|---|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		if r.Burst == nil || r.Burst.Watch == nil {
			continue
		}
		op := r.Burst.Watch
		ref := &benchkit.WatchTraffic{}
		if r.Scripted != nil && r.Scripted.Watch != nil {
			ref = r.Scripted.Watch
		}
		n := float64(r.N)
		var rows []string
		for resource, events := range op.Events {
			if events/n >= 0.05 || ref.Events[resource]/n >= 0.05 {
				rows = append(rows, resource)
			}
		}
		for resource, events := range ref.Events {
			if _, seen := op.Events[resource]; !seen && events/n >= 0.05 {
				rows = append(rows, resource)
			}
		}
		slices.SortFunc(rows, func(a, b string) int { return cmp.Compare(op.Bytes[b], op.Bytes[a]) })
		var totalOp, totalRef, bytesOp, bytesRef float64
		for _, resource := range rows {
			w.P("| %d | %s | %.2f | %.2f | %.0f | %.0f |\n", r.N, resource, op.Events[resource]/n, ref.Events[resource]/n, op.Bytes[resource]/n, ref.Bytes[resource]/n)
			totalOp, totalRef = totalOp+op.Events[resource], totalRef+ref.Events[resource]
			bytesOp, bytesRef = bytesOp+op.Bytes[resource], bytesRef+ref.Bytes[resource]
		}
		w.P("| %d | **all above** | **%.2f** | **%.2f** | **%.0f** | **%.0f** |\n", r.N, totalOp/n, totalRef/n, bytesOp/n, bytesRef/n)
	}
	w.P("\n")
}
