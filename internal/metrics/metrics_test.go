package metrics

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/testgen"
)

func status(ready bool, generation int64) websitev1.WebsiteStatus {
	s := metav1.ConditionFalse
	if ready {
		s = metav1.ConditionTrue
	}
	return websitev1.WebsiteStatus{
		ObservedGeneration: generation,
		Conditions:         []metav1.Condition{{Type: websitev1.ReadyCondition, Status: s}},
	}
}

func histogram(g Gomega, tracker *ReadinessTracker) (count uint64, sum float64) {
	var m dto.Metric
	g.Expect(tracker.histogram.Write(&m)).To(Succeed())
	return m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()
}

func TestTimeToReady(t *testing.T) {
	g := NewWithT(t)
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(created.Add(time.Second))
	tracker := newReadinessTracker(clock)
	w := testgen.Website("site", "default")
	w.CreationTimestamp = metav1.NewTime(created)

	tracker.Observe(w, status(false, 1))
	w.Status = status(false, 1)
	clock.SetTime(created.Add(5 * time.Second))
	tracker.Observe(w, status(true, 1))
	count, sum := histogram(g, tracker)
	g.Expect(count).To(Equal(uint64(1)))
	g.Expect(sum).To(Equal(5.0), "from the creation of the Website")

	w.Status = status(true, 1)
	tracker.Observe(w, status(true, 1))
	count, _ = histogram(g, tracker)
	g.Expect(count).To(Equal(uint64(1)), "a Website that stays Ready is not counted again")

	// A spec change: timed from when the operator first saw it.
	w.Generation = 2
	clock.SetTime(created.Add(10 * time.Second))
	tracker.Observe(w, status(false, 2))
	w.Status = status(false, 2)
	clock.SetTime(created.Add(12 * time.Second))
	tracker.Observe(w, status(true, 2))
	count, sum = histogram(g, tracker)
	g.Expect(count).To(Equal(uint64(2)))
	g.Expect(sum).To(Equal(7.0))
	g.Expect(tracker.pending).To(BeEmpty())
}
