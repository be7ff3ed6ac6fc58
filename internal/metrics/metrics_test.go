package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// listReader lists the Websites it holds and records whether the list asked
// for the cached objects themselves rather than copies.
type listReader struct {
	client.Reader
	websites []websitev1.Website
	noCopies bool
}

func (r *listReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	r.noCopies = o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy
	list.(*websitev1.WebsiteList).Items = r.websites
	return nil
}

// Websites are counted by the status of each condition as of their current
// generation, from the cached objects themselves: the count only reads them.
func TestWebsitesAreCountedByConditionFromTheCachedObjects(t *testing.T) {
	g := NewWithT(t)
	ready := testgen.Website("ready", "team")
	ready.Generation = 2
	ready.Status = status(true, 2)
	ready.Status.Conditions[0].ObservedGeneration = 2
	stale := testgen.Website("stale", "team") // Ready for a generation it no longer has
	stale.Generation = 3
	stale.Status = status(true, 2)
	stale.Status.Conditions[0].ObservedGeneration = 2
	failing := testgen.Website("failing", "team")
	failing.Generation = 1
	failing.Status = status(false, 1)
	failing.Status.Conditions[0].ObservedGeneration = 1
	reader := &listReader{websites: []websitev1.Website{*ready, *stale, *failing}}

	registry := prometheus.NewRegistry()
	g.Expect(registry.Register(&conditionCollector{reader: reader})).To(Succeed())
	g.Expect(testutil.GatherAndCompare(registry, strings.NewReader(`
# HELP platform_operator_websites Websites by the status of each of their conditions (Ready, Progressing, Degraded); Unknown when the operator has not reported it yet.
# TYPE platform_operator_websites gauge
platform_operator_websites{condition="Degraded",status="False"} 0
platform_operator_websites{condition="Degraded",status="True"} 0
platform_operator_websites{condition="Degraded",status="Unknown"} 3
platform_operator_websites{condition="Progressing",status="False"} 0
platform_operator_websites{condition="Progressing",status="True"} 0
platform_operator_websites{condition="Progressing",status="Unknown"} 3
platform_operator_websites{condition="Ready",status="False"} 1
platform_operator_websites{condition="Ready",status="True"} 1
platform_operator_websites{condition="Ready",status="Unknown"} 1
`), "platform_operator_websites")).To(Succeed())
	g.Expect(reader.noCopies).To(BeTrue(), "the list asks for the cached objects, not copies")
}
