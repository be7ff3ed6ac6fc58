package domainmetrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	examplev1 "example.com/platform-operator/api/v1"
)

// cachedList is a reader that hands out one list without copying it, as
// the informer cache does with client.UnsafeDisableDeepCopy; the fake
// client would measure its own copies.
type cachedList struct{ list *examplev1.WebsiteList }

func (c cachedList) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not a cache of single objects")
}

func (c cachedList) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*examplev1.WebsiteList)
	if !ok {
		return fmt.Errorf("only Websites here, not %T", list)
	}
	*l = *c.list
	return nil
}

// BenchmarkScrapeWebsites measures one scrape of N Websites with the
// conditions the Website controller writes, through a registry as
// /metrics gathers: what a scrape costs the operator per object.
func BenchmarkScrapeWebsites(b *testing.B) {
	const n = 1000
	var list examplev1.WebsiteList
	for i := range n {
		w := &examplev1.Website{
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: fmt.Sprintf("site-%d", i), Generation: 1},
			Spec:       examplev1.WebsiteSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](2)},
			Status:     examplev1.WebsiteStatus{ReadyReplicas: 2},
		}
		for _, t := range []string{"Ready", "Progressing", "Degraded", "Reconciling", "Stalled"} {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse, ObservedGeneration: 1})
		}
		list.Items = append(list.Items, *w)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(cachedList{&list}, []string{Website}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
