package kit

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	websitev1 "example.com/platform-operator/api/v1"
)

func readyConditions(ready bool, generation int64) []metav1.Condition {
	s := metav1.ConditionFalse
	if ready {
		s = metav1.ConditionTrue
	}
	return []metav1.Condition{{Type: "Ready", Status: s, ObservedGeneration: generation}}
}

func timeToReadyOf(g Gomega, kind string) (count uint64, sum float64) {
	var m dto.Metric
	g.Expect(timeToReady.WithLabelValues(kind).(interface{ Write(*dto.Metric) error }).Write(&m)).To(Succeed())
	return m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()
}

func TestTimeToReady(t *testing.T) {
	g := NewWithT(t)
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(created.Add(time.Second))
	r := newReadiness(clock, "time-to-ready-test", "Ready")
	w := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default", Generation: 1, CreationTimestamp: metav1.NewTime(created)}}

	r.observe(w, nil, readyConditions(false, 1))
	clock.SetTime(created.Add(5 * time.Second))
	r.observe(w, readyConditions(false, 1), readyConditions(true, 1))
	count, sum := timeToReadyOf(g, "time-to-ready-test")
	g.Expect(count).To(Equal(uint64(1)))
	g.Expect(sum).To(Equal(5.0), "from the creation of the object")

	r.observe(w, readyConditions(true, 1), readyConditions(true, 1))
	count, _ = timeToReadyOf(g, "time-to-ready-test")
	g.Expect(count).To(Equal(uint64(1)), "an object that stays Ready is not counted again")

	// A spec change: timed from when the operator first saw it.
	w.Generation = 2
	clock.SetTime(created.Add(10 * time.Second))
	r.observe(w, readyConditions(true, 1), readyConditions(false, 2))
	clock.SetTime(created.Add(12 * time.Second))
	r.observe(w, readyConditions(false, 2), readyConditions(true, 2))
	count, sum = timeToReadyOf(g, "time-to-ready-test")
	g.Expect(count).To(Equal(uint64(2)))
	g.Expect(sum).To(Equal(7.0))
	g.Expect(r.pending).To(BeEmpty())
}

// Objects are counted by the status of each condition as of their current
// generation.
func TestObjectsAreCountedByConditionOfTheirCurrentGeneration(t *testing.T) {
	g := NewWithT(t)
	counts := map[string]map[metav1.ConditionStatus]int{}
	types := []string{"Ready", "Degraded"}
	countConditions(counts, types, readyConditions(true, 2), 2)  // ready
	countConditions(counts, types, readyConditions(true, 2), 3)  // ready for a generation it no longer has
	countConditions(counts, types, readyConditions(false, 1), 1) // failing
	g.Expect(counts).To(Equal(map[string]map[metav1.ConditionStatus]int{
		"Ready":    {metav1.ConditionTrue: 1, metav1.ConditionFalse: 1, metav1.ConditionUnknown: 1},
		"Degraded": {metav1.ConditionUnknown: 3},
	}))

	collector := &conditionCollector{counters: map[string]conditionCounter{
		"website": func(context.Context) (map[string]map[metav1.ConditionStatus]int, error) { return counts, nil },
	}}
	ch := make(chan prometheus.Metric, 32)
	go func() { collector.Collect(ch); close(ch) }()
	var got int
	for range ch {
		got++
	}
	g.Expect(got).To(Equal(6), "three statuses of each of two conditions")
}
