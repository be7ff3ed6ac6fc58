package domainmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionDesc is one series per condition of an object and status, 1 for
// the status the condition has and 0 for the others, as kube-state-metrics'
// kube_deployment_status_condition and Flux's gotk_reconcile_condition: an
// alert selects status="True" and compares with 1, and a condition that
// flips leaves no stale series behind.
var conditionDesc = prometheus.NewDesc("platform_operator_condition",
	"Conditions of each object: 1 for the status the condition has, 0 for the others; Unknown when the condition does not describe the object's current generation.",
	[]string{"kind", "namespace", "name", "type", "status"}, nil)

var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

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
		for _, s := range conditionStatuses {
			value := 0.0
			if s == status {
				value = 1
			}
			e.gauge(conditionDesc, value, kindName, obj.GetNamespace(), obj.GetName(), c.Type, string(s))
		}
	}
}

// unixSeconds is t as Prometheus times are, in seconds since the epoch.
func unixSeconds(t metav1.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
