package domainmetrics

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	examplev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
)

// Read from a real manager's cache, as the operator reads it, a scrape
// shows what the API server holds and sends no request to it: client-go's
// count of requests (rest_client_requests_total, every client of the
// process) does not move over three scrapes.
func TestScrapesReadTheCacheAndCallNoAPI(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()

	site := &examplev1.Website{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cached"},
		Spec:       examplev1.WebsiteSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](3)},
	}
	g.Expect(suite.Client.Create(ctx, site)).To(Succeed())
	site.Status.ReadyReplicas = 2
	g.Expect(suite.Client.Status().Update(ctx, site)).To(Succeed())

	// The operator makes these informers before its manager starts
	// (warmCache); here, before the first scrape.
	c := suite.Manager.GetCache()
	for _, obj := range []client.Object{&examplev1.Website{}, &v1alpha1.Tenant{}, &v1alpha1.BackupJob{}, &v1alpha1.PostgresCluster{}} {
		_, err := c.GetInformer(ctx, obj)
		g.Expect(err).NotTo(HaveOccurred())
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(c, []string{Website, Tenant, BackupJob, PostgresCluster}))
	g.Eventually(func() float64 { return gaugeValue(t, reg, "platform_operator_website_replicas_ready", "cached") }).
		WithTimeout(10 * time.Second).Should(Equal(2.0))

	before := apiRequests(t)
	for range 3 {
		_, err := reg.Gather()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(apiRequests(t)).To(Equal(before), "requests to the API server during the scrapes")
	g.Expect(gaugeValue(t, reg, "platform_operator_website_replicas_desired", "cached")).To(Equal(3.0))
}

// gaugeValue is the value of the series of metric whose name label is name,
// or -1 when there is none.
func gaugeValue(t *testing.T, reg prometheus.Gatherer, metric, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "name") == name {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func labelValue(m *dto.Metric, label string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == label {
			return l.GetValue()
		}
	}
	return ""
}

// apiRequests is the total of client-go's request counter, which
// controller-runtime registers on its registry for every client.
func apiRequests(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == "rest_client_requests_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	if total == 0 {
		t.Fatal("rest_client_requests_total counted nothing: is client-go's metric registered?")
	}
	return total
}
