package main

import (
	"cmp"
	"fmt"
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
// API server sent its watchers during the burst, with the operator, beside
// those of the same objects made by a plain client without an operator
// (the scripted phase) and of the kopf peer's phase, when they ran: the
// difference is what watching and being watched costs the control plane
// for each (its own watches, and the events of its children and status
// writes for every other watcher).
func writeWatchTraffic(w *mdWriter, res *results) {
	if !res.anyRun(func(r *runResult) bool { return r.Burst != nil && r.Burst.Watch != nil }) {
		return
	}
	w.P("\n### Watch traffic\n\nEvents (`apiserver_watch_events_total`) and bytes (`apiserver_watch_events_sizes`) the API server sent to every watcher, per Website, from the first create until every Website was Ready (every Deployment Available for kopf): in the operator's burst, the scripted phase (the same objects made by a plain client, no operator) and the kopf peer's phase, when they ran. Last round of each.\n\n")
	w.P("| N | resource | events: operator | events: scripted | events: kopf | bytes: operator | bytes: scripted | bytes: kopf |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Runs {
		if r.Burst == nil || r.Burst.Watch == nil {
			continue
		}
		sides := []*benchkit.WatchTraffic{r.Burst.Watch, nil, nil}
		if r.Scripted != nil {
			sides[1] = r.Scripted.Watch
		}
		if r.Kopf != nil {
			sides[2] = r.Kopf.Watch
		}
		n := float64(r.N)
		seen := map[string]bool{}
		var rows []string
		for _, side := range sides {
			if side == nil {
				continue
			}
			for resource, events := range side.Events {
				if events/n >= 0.05 && !seen[resource] {
					seen[resource] = true
					rows = append(rows, resource)
				}
			}
		}
		op := r.Burst.Watch
		slices.SortFunc(rows, func(a, b string) int {
			if c := cmp.Compare(op.Bytes[b], op.Bytes[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		cell := func(side *benchkit.WatchTraffic, values func(*benchkit.WatchTraffic) map[string]float64, resource, format string) string {
			if side == nil {
				return "—"
			}
			return fmt.Sprintf(format, values(side)[resource]/n)
		}
		events := func(t *benchkit.WatchTraffic) map[string]float64 { return t.Events }
		bytes := func(t *benchkit.WatchTraffic) map[string]float64 { return t.Bytes }
		totals := make([]*benchkit.WatchTraffic, len(sides))
		for i, side := range sides {
			if side != nil {
				totals[i] = &benchkit.WatchTraffic{Events: map[string]float64{}, Bytes: map[string]float64{}}
			}
		}
		for _, resource := range rows {
			w.P("| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.N, resource,
				cell(sides[0], events, resource, "%.2f"), cell(sides[1], events, resource, "%.2f"), cell(sides[2], events, resource, "%.2f"),
				cell(sides[0], bytes, resource, "%.0f"), cell(sides[1], bytes, resource, "%.0f"), cell(sides[2], bytes, resource, "%.0f"))
			for i, side := range sides {
				if side != nil {
					totals[i].Events[""] += side.Events[resource]
					totals[i].Bytes[""] += side.Bytes[resource]
				}
			}
		}
		w.P("| %d | **all above** | **%s** | **%s** | **%s** | **%s** | **%s** | **%s** |\n", r.N,
			cell(totals[0], events, "", "%.2f"), cell(totals[1], events, "", "%.2f"), cell(totals[2], events, "", "%.2f"),
			cell(totals[0], bytes, "", "%.0f"), cell(totals[1], bytes, "", "%.0f"), cell(totals[2], bytes, "", "%.0f"))
	}
	w.P("\n")
}
