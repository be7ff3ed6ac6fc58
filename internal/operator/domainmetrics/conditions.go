package domainmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionDesc is one series per condition of an object, at 1, labelled
// with the condition's status, as Flux's gotk_reconcile_condition labels
// it; an alert selects status="True". Unlike kube-state-metrics, no series
// at 0 stands for the statuses the condition does not have: they would
// triple the series, and a scrape's cost grows with them (about 1 KB and
// a few µs per series: BenchmarkScrapeWebsites). A condition that flips
// replaces its series, and the old one goes stale at the next scrape.
var conditionDesc = prometheus.NewDesc("platform_operator_condition",
	"Conditions of each object: 1, labelled with the condition's status; Unknown when the condition does not describe the object's current generation.",
	[]string{"kind", "namespace", "name", "type", "status"}, nil)

// emitConditions sends the conditions of obj (bounded by the API: at most 8
// per object). A condition about an older generation is reported Unknown,
// as platform_operator_resources counts it: it says nothing of the spec
// the object has now.
func (e emitter) conditions(kindName string, obj metav1.Object, conditions []metav1.Condition) {
	for _, c := range conditions {
		status := c.Status
		if c.ObservedGeneration != 0 && c.ObservedGeneration != obj.GetGeneration() {
			status = metav1.ConditionUnknown
		}
		e.gauge(conditionDesc, 1, kindName, obj.GetNamespace(), obj.GetName(), c.Type, string(status))
	}
}

// unixSeconds is t as Prometheus times are, in seconds since the epoch.
func unixSeconds(t metav1.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
