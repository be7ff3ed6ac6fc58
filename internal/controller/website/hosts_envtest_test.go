package website_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// An Ingress host is held by the namespace whose Website claimed it first:
// a Website of another namespace asking for it (here for /login of a shop)
// gets no Ingress, loses the one it had, and says who holds the host with a
// Warning; once the holder is gone, it gets its Ingress.
func TestIngressHostOfAnotherNamespaceIsAConflict(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	first, second := newNamespace(t), newNamespace(t)
	shop := "shop." + first + ".example.com"

	createWebsite(t, websitetest.Website("shop", first, websitetest.WithIngress(shop, "/", "", "")))
	shopIngress := &networkingv1.Ingress{}
	g.Eventually(func() error {
		return k8sClient.Get(ctx, types.NamespacedName{Namespace: first, Name: "shop"}, shopIngress)
	}).WithTimeout(timeout).Should(Succeed())
	// Claims are ordered by creation time, in seconds: the second Website
	// is made in a later second, so that it is the later claimant whatever
	// the namespaces' names.
	created := getWebsite(g, ctx, first, "shop").CreationTimestamp.Time
	time.Sleep(time.Until(created.Add(time.Second)))

	// The second namespace's Website first serves a host of its own, then
	// asks for the shop's.
	createWebsite(t, websitetest.Website("login", second, websitetest.WithIngress("login."+second+".example.com", "/login", "", "")))
	loginKey := types.NamespacedName{Namespace: second, Name: "login"}
	g.Eventually(func() error { return k8sClient.Get(ctx, loginKey, &networkingv1.Ingress{}) }).WithTimeout(timeout).Should(Succeed())
	updateWebsite(g, ctx, second, "login", func(w *websitev1.Website) { w.Spec.Ingress.Host = shop })

	g.Eventually(func(g Gomega) {
		login := getWebsite(g, ctx, second, "login")
		g.Expect(login.Status.ObservedGeneration).To(Equal(login.Generation))
		for _, typ := range []string{websitev1.ReadyCondition, websitev1.DegradedCondition} {
			c := condition(login, typ)
			g.Expect(c.Reason).To(Equal(websitev1.HostConflictReason), typ)
			g.Expect(c.Message).To(ContainSubstring("Website " + first + "/shop"))
			g.Expect(c.Message).To(ContainSubstring(shop))
		}
		g.Expect(condition(login, websitev1.DegradedCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(login.Status.URL).NotTo(ContainSubstring(shop))
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, loginKey, &networkingv1.Ingress{}))).To(BeTrue(), "its Ingress is removed")
		g.Expect(eventReasons(g, ctx, second, "login")).To(ContainElement(websitev1.HostConflictReason))
	}).WithTimeout(timeout).Should(Succeed())
	g.Consistently(func() error {
		return k8sClient.Get(ctx, loginKey, &networkingv1.Ingress{})
	}).WithTimeout(2*time.Second).Should(Satisfy(apierrors.IsNotFound), "and never made again")

	// The holder keeps its host and its Ingress, unchanged.
	held := &networkingv1.Ingress{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: first, Name: "shop"}, held)).To(Succeed())
	g.Expect(held.ResourceVersion).To(Equal(shopIngress.ResourceVersion))
	g.Expect(condition(getWebsite(g, ctx, first, "shop"), websitev1.DegradedCondition).Reason).NotTo(Equal(websitev1.HostConflictReason))

	// The holder goes: the next claimant gets the host, from the watch of
	// the Websites sharing it (the conflict is not rechecked on a timer).
	g.Expect(k8sClient.Delete(ctx, getWebsite(g, ctx, first, "shop"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		ingress := &networkingv1.Ingress{}
		g.Expect(k8sClient.Get(ctx, loginKey, ingress)).To(Succeed())
		g.Expect(ingress.Spec.Rules).To(ConsistOf(HaveField("Host", shop)))
		g.Expect(ingress.Spec.Rules[0].HTTP.Paths).To(ConsistOf(HaveField("Path", "/login")))
		login := getWebsite(g, ctx, second, "login")
		g.Expect(condition(login, websitev1.DegradedCondition).Reason).NotTo(Equal(websitev1.HostConflictReason))
		g.Expect(login.Status.URL).To(Equal("http://" + shop + "/login"))
	}).WithTimeout(timeout).Should(Succeed())
}

// Websites of one namespace share a host as they always did: each has its
// Ingress for its path.
func TestWebsitesOfOneNamespaceShareAHost(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	createWebsite(t, websitetest.Website("shop", ns, websitetest.WithIngress(hostOf(ns), "/", "", "")))
	createWebsite(t, websitetest.Website("blog", ns, websitetest.WithIngress(hostOf(ns), "/blog", "", "")))
	for _, name := range []string{"shop", "blog"} {
		g.Eventually(func(g Gomega) {
			ingress := &networkingv1.Ingress{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ingress)).To(Succeed())
			g.Expect(ingress.Spec.Rules).To(ConsistOf(HaveField("Host", hostOf(ns))))
			w := getWebsite(g, ctx, ns, name)
			g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
			g.Expect(condition(w, websitev1.DegradedCondition).Reason).NotTo(Equal(websitev1.HostConflictReason))
		}).WithTimeout(timeout).Should(Succeed(), name)
	}
}

// An Ingress of every host (no spec.ingress.host) is claimed as a host is:
// an ingress controller merges every such rule, of every namespace, into
// its default server. The second namespace's gets none, and gets it once
// the first namespace's is gone.
func TestIngressOfEveryHostIsHeldByOneNamespace(t *testing.T) {
	needsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	first, second := newNamespace(t), newNamespace(t)
	everyHost := func(name, ns string) *websitev1.Website {
		w := websitetest.Website(name, ns)
		w.Spec.Ingress = &websitev1.WebsiteIngress{Path: "/"}
		return w
	}
	holder := createWebsite(t, everyHost("default", first))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, holder) })
	g.Eventually(func() error {
		return k8sClient.Get(ctx, types.NamespacedName{Namespace: first, Name: "default"}, &networkingv1.Ingress{})
	}).WithTimeout(timeout).Should(Succeed())
	created := getWebsite(g, ctx, first, "default").CreationTimestamp.Time
	time.Sleep(time.Until(created.Add(time.Second)))

	claimant := createWebsite(t, everyHost("login", second))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, claimant) })
	loginKey := types.NamespacedName{Namespace: second, Name: "login"}
	g.Eventually(func(g Gomega) {
		login := getWebsite(g, ctx, second, "login")
		g.Expect(login.Status.ObservedGeneration).To(Equal(login.Generation))
		c := condition(login, websitev1.DegradedCondition)
		g.Expect(c.Reason).To(Equal(websitev1.HostConflictReason))
		g.Expect(c.Message).To(ContainSubstring("the Ingress of every host"))
		g.Expect(c.Message).To(ContainSubstring("Website " + first + "/default"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, loginKey, &networkingv1.Ingress{}))).To(BeTrue(), "no Ingress of every host for the later namespace")

	g.Expect(k8sClient.Delete(ctx, holder)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ingress := &networkingv1.Ingress{}
		g.Expect(k8sClient.Get(ctx, loginKey, ingress)).To(Succeed())
		g.Expect(ingress.Spec.Rules).To(ConsistOf(HaveField("Host", "")))
		g.Expect(condition(getWebsite(g, ctx, second, "login"), websitev1.DegradedCondition).Reason).NotTo(Equal(websitev1.HostConflictReason))
	}).WithTimeout(timeout).Should(Succeed())
}
