package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// Ready means reachable: while the Website's Service routes to no pod, the
// Website is not Ready, although its Deployment stays Available. The test
// stops kube-controller-manager, which keeps the Deployment's status as it
// is, and deletes the Service's EndpointSlices, as if its EndpointSlice
// controller had emptied them; starting it again routes the pods again.
func TestWebsiteIsNotReadyWhileItsServiceRoutesToNoPod(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	setup, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	e, err := newEnvironment(setup, envOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(e.Stop)
	ns := "default"

	w := websitetest.Website("site", ns, websitetest.WithReplicas(2))
	w.UID, w.Generation = "", 0
	g.Expect(e.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, ns, "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(e.Cluster.StopComponent("kube-controller-manager")).To(Succeed())
	g.Expect(e.Client.DeleteAllOf(ctx, &discoveryv1.EndpointSlice{}, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: "site"})).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready := readyCondition(e.website(g, ctx, ns, "site"))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(websitev1.EndpointsNotReadyReason))
		g.Expect(ready.Message).To(Equal("Service site routes to 0 of 2 available pods"))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(e.Cluster.StartComponent("kube-controller-manager")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, ns, "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2*timeout).Should(Succeed(), "routed again once the EndpointSlice controller is back")
}
