package kit

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics every kind gets from its Loop, served with controller-runtime's
// on the operator's /metrics endpoint:
//
//   - platform_operator_resources{kind,condition,status}: the objects of each
//     kind by the status of each of its conditions, Unknown where the
//     operator has not reported on the current generation yet; counted from
//     the cache at every scrape, so never stale and costing no API call;
//   - platform_operator_time_to_ready_seconds{kind}: how long an object took
//     from its creation, or a change of its spec, until it was first Ready.
var (
	timeToReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "platform_operator_time_to_ready_seconds",
		Help: "Time from the creation of an object, or a change of its spec, until it was first seen Ready, by kind.",
		// From a fraction of a second (a spec change that restarts nothing)
		// to minutes (a rollout of many replicas, a database's first start).
		Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
	}, []string{"kind"})

	resourcesDesc = prometheus.NewDesc("platform_operator_resources",
		"Objects of each kind by the status of each of their conditions; Unknown when the operator has not reported on the current generation yet.",
		[]string{"kind", "condition", "status"}, nil)

	conditions = &conditionCollector{counters: map[string]conditionCounter{}}

	registerOnce sync.Once
)

// register adds the kit's metrics to controller-runtime's registry, once
// per process.
func register() {
	registerOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(timeToReady, conditions)
	})
}

// conditionCounter counts one kind's objects by condition: each condition
// type maps to a count per status.
type conditionCounter func(ctx context.Context) (map[string]map[metav1.ConditionStatus]int, error)

// conditionCollector counts, at scrape time, the objects of every kind whose
// Loop was set up.
type conditionCollector struct {
	mu       sync.Mutex
	counters map[string]conditionCounter
}

// set makes the collector count kind with count; a Loop set up again (in
// tests, on another manager) replaces its kind's counter.
func (c *conditionCollector) set(kind string, count conditionCounter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters[kind] = count
}

func (c *conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- resourcesDesc }

func (c *conditionCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	kinds := make([]string, 0, len(c.counters))
	for kind := range c.counters {
		kinds = append(kinds, kind)
	}
	counters := c.counters
	c.mu.Unlock()
	slices.Sort(kinds)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	for _, kind := range kinds {
		counts, err := counters[kind](ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(resourcesDesc, err)
			continue
		}
		types := make([]string, 0, len(counts))
		for t := range counts {
			types = append(types, t)
		}
		slices.Sort(types)
		for _, t := range types {
			for _, status := range statuses {
				ch <- prometheus.MustNewConstMetric(resourcesDesc, prometheus.GaugeValue, float64(counts[t][status]), kind, t, string(status))
			}
		}
	}
}

// countConditions adds one object's conditions to counts: the status of each
// condition type in types that describes generation, else Unknown.
func countConditions(counts map[string]map[metav1.ConditionStatus]int, types []string, conditions []metav1.Condition, generation int64) {
	for _, t := range types {
		status := metav1.ConditionUnknown
		if c := meta.FindStatusCondition(conditions, t); c != nil && c.ObservedGeneration == generation {
			status = c.Status
		}
		if counts[t] == nil {
			counts[t] = map[metav1.ConditionStatus]int{}
		}
		counts[t][status]++
	}
}

// readiness measures the time from a change of an object to Ready.
type readiness struct {
	clock          clock.PassiveClock
	kind           string
	readyCondition string

	mu sync.Mutex
	// pending maps an object to the generation it has not yet been Ready
	// for, and when that generation was first seen.
	pending map[types.NamespacedName]pendingGeneration
}

type pendingGeneration struct {
	generation int64
	since      time.Time
}

func newReadiness(clk clock.PassiveClock, kind, readyCondition string) *readiness {
	return &readiness{clock: clk, kind: kind, readyCondition: readyCondition, pending: map[types.NamespacedName]pendingGeneration{}}
}

// observe is told every status written or confirmed for obj: before, the
// conditions obj had, and now, those just computed.
func (r *readiness) observe(obj metav1.Object, before, now []metav1.Condition) {
	if r == nil || r.readyCondition == "" {
		return
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	ready := meta.IsStatusConditionTrue(now, r.readyCondition)
	previous := meta.FindStatusCondition(before, r.readyCondition)
	wasReady := previous != nil && previous.Status == metav1.ConditionTrue && previous.ObservedGeneration == obj.GetGeneration()

	r.mu.Lock()
	defer r.mu.Unlock()
	pending, tracked := r.pending[key]
	switch {
	case ready && !wasReady:
		since := pending.since
		if !tracked || pending.generation != obj.GetGeneration() {
			since = startOf(obj, r.clock.Now())
		}
		timeToReady.WithLabelValues(r.kind).Observe(r.clock.Since(since).Seconds())
		delete(r.pending, key)
	case ready:
		delete(r.pending, key)
	case !tracked || pending.generation != obj.GetGeneration():
		r.pending[key] = pendingGeneration{generation: obj.GetGeneration(), since: startOf(obj, r.clock.Now())}
	}
}

// startOf is when the wait for Ready began: the creation of obj for its
// first generation, else now, the first time the new generation was seen.
func startOf(obj metav1.Object, now time.Time) time.Time {
	if created := obj.GetCreationTimestamp(); obj.GetGeneration() <= 1 && !created.IsZero() {
		return created.Time
	}
	return now
}

// forget drops what is tracked of a deleted object.
func (r *readiness) forget(key types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, key)
}
