// Package metrics defines the operator's own Prometheus metrics, served with
// controller-runtime's on the secure /metrics endpoint:
//
//   - platform_operator_websites{condition,status}: Websites by the status of
//     each condition, counted from the operator's cache at every scrape;
//   - platform_operator_time_to_ready_seconds: how long a Website took from a
//     change of its spec (or its creation) to Ready=True.
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
)

// Register adds the operator's metrics to registry and returns the observer
// that the reconciler reports statuses to.
func Register(registry prometheus.Registerer, websites client.Reader, clk clock.PassiveClock) (*ReadinessTracker, error) {
	tracker := newReadinessTracker(clk)
	for _, c := range []prometheus.Collector{tracker.histogram, &conditionCollector{reader: websites}} {
		if err := registry.Register(c); err != nil {
			return nil, err
		}
	}
	return tracker, nil
}

// ReadinessTracker measures the time from a change of a Website to Ready.
type ReadinessTracker struct {
	clock     clock.PassiveClock
	histogram prometheus.Histogram

	mu sync.Mutex
	// pending maps a Website to the generation it has not yet been Ready
	// for, and when that generation was first seen.
	pending map[types.NamespacedName]pendingGeneration
}

type pendingGeneration struct {
	generation int64
	since      time.Time
}

func newReadinessTracker(clk clock.PassiveClock) *ReadinessTracker {
	return &ReadinessTracker{
		clock: clk,
		histogram: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "platform_operator_time_to_ready_seconds",
			Help: "Time from the creation of a Website, or a change of its spec, until it was first seen Ready.",
			// From a fraction of a second (a spec change that restarts nothing)
			// to minutes (a rollout of many replicas).
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
		pending: map[types.NamespacedName]pendingGeneration{},
	}
}

// Observe is told every status the reconciler computes for w.
func (t *ReadinessTracker) Observe(w *websitev1.Website, status websitev1.WebsiteStatus) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	ready := meta.IsStatusConditionTrue(status.Conditions, websitev1.ReadyCondition)
	wasReady := meta.IsStatusConditionTrue(w.Status.Conditions, websitev1.ReadyCondition) &&
		w.Status.ObservedGeneration == w.Generation

	t.mu.Lock()
	defer t.mu.Unlock()
	pending, tracked := t.pending[key]
	switch {
	case ready && !wasReady:
		since := pending.since
		if !tracked || pending.generation != w.Generation {
			since = startOf(w, t.clock.Now())
		}
		t.histogram.Observe(t.clock.Since(since).Seconds())
		delete(t.pending, key)
	case ready:
		delete(t.pending, key)
	case !tracked || pending.generation != w.Generation:
		t.pending[key] = pendingGeneration{generation: w.Generation, since: startOf(w, t.clock.Now())}
	}
}

// startOf is when the wait for Ready began: the creation of w for its first
// generation, else now, the first time the new generation was seen.
func startOf(w *websitev1.Website, now time.Time) time.Time {
	if w.Generation <= 1 && !w.CreationTimestamp.IsZero() {
		return w.CreationTimestamp.Time
	}
	return now
}

// Forget drops what is tracked of a deleted Website.
func (t *ReadinessTracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, key)
}

var websitesDesc = prometheus.NewDesc(
	"platform_operator_websites",
	"Websites by the status of each of their conditions (Ready, Progressing, Degraded); Unknown when the operator has not reported it yet.",
	[]string{"condition", "status"}, nil)

// conditionCollector counts Websites by condition at scrape time, from the
// cache, so that the figure is never stale and costs no API call. It reads
// the cached Websites without copying them (it only counts): a copy of each
// at every scrape would be megabytes of garbage with thousands of Websites.
type conditionCollector struct {
	reader client.Reader
}

func (c *conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- websitesDesc }

func (c *conditionCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var websites websitev1.WebsiteList
	if err := c.reader.List(ctx, &websites, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(websitesDesc, err)
		return
	}
	conditions := []string{websitev1.ReadyCondition, websitev1.ProgressingCondition, websitev1.DegradedCondition}
	statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	counts := map[string]map[metav1.ConditionStatus]int{}
	for _, condition := range conditions {
		counts[condition] = map[metav1.ConditionStatus]int{}
	}
	for i := range websites.Items {
		w := &websites.Items[i]
		for _, condition := range conditions {
			status := metav1.ConditionUnknown
			if c := meta.FindStatusCondition(w.Status.Conditions, condition); c != nil && c.ObservedGeneration == w.Generation {
				status = c.Status
			}
			counts[condition][status]++
		}
	}
	for _, condition := range conditions {
		for _, status := range statuses {
			ch <- prometheus.MustNewConstMetric(websitesDesc, prometheus.GaugeValue,
				float64(counts[condition][status]), condition, string(status))
		}
	}
}
