package main

import (
	"slices"

	"example.com/platform-operator/test/bench/benchkit"
)

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// operatorWrites are the writes attributed to the operator in one window.
type operatorWrites struct {
	// Websites counts writes to websites other than creates (the benchmark
	// creates Websites; the operator never does).
	Websites       float64 `json:"websites"`
	WebsitesStatus float64 `json:"websitesStatus"`
	// Deployments and Services count writes to the main resource only:
	// kube-controller-manager writes deployments/status, never the main
	// resource (checked against the ceiling phase, see ceilingKCMDeploymentWrites).
	Deployments float64 `json:"deployments"`
	Services    float64 `json:"services"`
	// Events counts writes to events.k8s.io and core events by anyone: the
	// scheduler and kube-controller-manager write events too. See
	// OperatorEvents for the operator's own.
	EventsAll float64 `json:"eventsAllWriters"`
}

func (w operatorWrites) children() float64 {
	return w.Websites + w.WebsitesStatus + w.Deployments + w.Services
}

func attribute(c benchkit.RequestCounts) operatorWrites {
	return operatorWrites{
		Websites:       c.Sum("example.com/websites", "POST"),
		WebsitesStatus: c.Sum("example.com/websites/status"),
		Deployments:    c.Sum("apps/deployments"),
		Services:       c.Sum("services"),
		EventsAll:      c.Sum("events") + c.Sum("events.k8s.io/events"),
	}
}

func (w operatorWrites) minus(o operatorWrites) operatorWrites {
	sub := func(a, b float64) float64 {
		if a-b < 0 {
			return 0
		}
		return a - b
	}
	return operatorWrites{
		Websites:       sub(w.Websites, o.Websites),
		WebsitesStatus: sub(w.WebsitesStatus, o.WebsitesStatus),
		Deployments:    sub(w.Deployments, o.Deployments),
		Services:       sub(w.Services, o.Services),
		EventsAll:      sub(w.EventsAll, o.EventsAll),
	}
}

// operatorStats are the figures the benchmark reads from the operator's own
// metrics.
type operatorStats struct {
	Reconciles    float64            `json:"reconciles"`
	ReconcileErrs float64            `json:"reconcileErrors"`
	QueueDepth    float64            `json:"queueDepth"`
	Requests      map[string]float64 `json:"clientRequestsByMethod"`
	// ChildReads are the Website controller's reads of children past the
	// cache (platform_operator_child_reads_total), by "kind/reason".
	ChildReads   map[string]float64 `json:"childReadsPastTheCache"`
	HeapInuseMiB float64            `json:"heapInuseMiB"`
	RSSMiB       float64            `json:"processRSSMiB"`
	Goroutines   float64            `json:"goroutines"`
}

func summarizeOperator(samples []benchkit.Sample) operatorStats {
	st := operatorStats{Requests: map[string]float64{}, ChildReads: map[string]float64{}}
	for _, s := range samples {
		switch s.Name {
		case "controller_runtime_reconcile_total":
			if s.Labels["controller"] == "website" {
				st.Reconciles += s.Value
				if s.Labels["result"] == "error" {
					st.ReconcileErrs += s.Value
				}
			}
		case "workqueue_depth":
			if s.Labels["name"] == "website" || s.Labels["controller"] == "website" {
				st.QueueDepth += s.Value
			}
		case "rest_client_requests_total":
			st.Requests[s.Labels["method"]] += s.Value
		case "platform_operator_child_reads_total":
			if s.Labels["owner_kind"] == "Website" {
				st.ChildReads[s.Labels["child_kind"]+"/"+s.Labels["reason"]] += s.Value
			}
		case "go_memstats_heap_inuse_bytes":
			st.HeapInuseMiB = benchkit.Round3(s.Value / (1 << 20))
		case "process_resident_memory_bytes":
			st.RSSMiB = benchkit.Round3(s.Value / (1 << 20))
		case "go_goroutines":
			st.Goroutines = s.Value
		}
	}
	return st
}
