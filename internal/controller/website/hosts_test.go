package website

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// claimant is a Website of namespace ns named name, created at second
// created, whose Ingress serves host ("" for no Ingress).
func claimant(ns, name string, created int, host string) websitev1.Website {
	var opts []websitetest.Option
	if host != "" {
		opts = append(opts, websitetest.WithIngress(host, "/", "", ""))
	}
	w := websitetest.Website(name, ns, opts...)
	w.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, created, 0, time.UTC))
	return *w
}

// catchAll is a Website of namespace ns named name, created at second
// created, whose Ingress has no host: it serves every host.
func catchAll(ns, name string, created int) websitev1.Website {
	w := claimant(ns, name, created, "")
	w.Spec.Ingress = &websitev1.WebsiteIngress{Path: "/"}
	return w
}

func TestHostHolder(t *testing.T) {
	const shop = "shop.example.com"
	tests := []struct {
		name    string
		website websitev1.Website
		sharers []websitev1.Website
		holder  string // namespace/name, "" for none
		host    string // what the conflict's message names, shop unless set
	}{
		{
			name:    "alone on its host",
			website: claimant("b", "site", 10, shop),
			sharers: []websitev1.Website{claimant("b", "site", 10, shop)},
		},
		{
			name:    "another namespace claimed it first",
			website: claimant("b", "login", 10, shop),
			sharers: []websitev1.Website{claimant("a", "shop", 5, shop), claimant("b", "login", 10, shop)},
			holder:  "a/shop",
		},
		{
			name:    "first claimant keeps it when a later one of another namespace comes",
			website: claimant("a", "shop", 5, shop),
			sharers: []websitev1.Website{claimant("a", "shop", 5, shop), claimant("b", "login", 10, shop)},
		},
		{
			name:    "Websites of one namespace share a host, whatever their age",
			website: claimant("a", "blog", 10, shop),
			sharers: []websitev1.Website{claimant("a", "shop", 5, shop), claimant("a", "blog", 10, shop)},
		},
		{
			name:    "the first of several earlier claimants is named",
			website: claimant("c", "site", 30, shop),
			sharers: []websitev1.Website{claimant("b", "late", 20, shop), claimant("a", "early", 5, shop), claimant("c", "site", 30, shop)},
			holder:  "a/early",
		},
		{
			name:    "a Website of the holder's namespace created after a third namespace's loses to the third",
			website: claimant("a", "blog", 30, shop),
			sharers: []websitev1.Website{claimant("b", "login", 20, shop), claimant("a", "blog", 30, shop)},
			holder:  "b/login",
		},
		{
			name:    "created in the same second: the first by namespace holds it",
			website: claimant("b", "site", 10, shop),
			sharers: []websitev1.Website{claimant("b", "site", 10, shop), claimant("a", "site", 10, shop)},
			holder:  "a/site",
		},
		{
			name:    "created in the same second: the later by namespace does not hold it",
			website: claimant("a", "site", 10, shop),
			sharers: []websitev1.Website{claimant("b", "site", 10, shop), claimant("a", "site", 10, shop)},
		},
		{
			name:    "another host is no conflict",
			website: claimant("b", "site", 10, shop),
			sharers: []websitev1.Website{claimant("a", "other", 5, "www.example.com")},
		},
		{
			name:    "a Website without a host (no Ingress) claims none",
			website: claimant("b", "site", 10, shop),
			sharers: []websitev1.Website{claimant("a", "plain", 5, "")},
		},
		{
			name:    "a Website without an Ingress is never in conflict",
			website: claimant("b", "site", 10, ""),
			sharers: []websitev1.Website{claimant("a", "shop", 5, shop), catchAll("a", "default", 5)},
		},
		{
			name:    "an Ingress of every host is claimed like a host: another namespace's came first",
			website: catchAll("b", "login", 10),
			sharers: []websitev1.Website{catchAll("a", "default", 5), catchAll("b", "login", 10)},
			holder:  "a/default",
			host:    "every host",
		},
		{
			name:    "the first Ingress of every host keeps it",
			website: catchAll("a", "default", 5),
			sharers: []websitev1.Website{catchAll("a", "default", 5), catchAll("b", "login", 10)},
		},
		{
			name:    "an Ingress of every host and one of a named host do not conflict",
			website: catchAll("b", "login", 10),
			sharers: []websitev1.Website{claimant("a", "shop", 5, shop)},
		},
		{
			name:    "a named host and an earlier Ingress of every host do not conflict",
			website: claimant("b", "site", 10, shop),
			sharers: []websitev1.Website{catchAll("a", "default", 5)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			holder := hostHolder(&tt.website, tt.sharers)
			if tt.holder == "" {
				g.Expect(holder).To(BeNil())
				return
			}
			g.Expect(holder).NotTo(BeNil())
			g.Expect(holder.Namespace + "/" + holder.Name).To(Equal(tt.holder))
			c := hostConflict(&tt.website, holder)
			g.Expect(c.reason).To(Equal(websitev1.HostConflictReason))
			g.Expect(c.message).To(ContainSubstring("Website " + tt.holder))
			if tt.host == "" {
				tt.host = shop
			}
			g.Expect(c.message).To(ContainSubstring(tt.host))
		})
	}
}

// Whichever of two Websites decides, they agree: exactly one holds a host
// that two namespaces claim, also when they were created in the same second.
func TestHostHolderIsDecidedAlikeByEveryClaimant(t *testing.T) {
	g := NewWithT(t)
	for _, seconds := range [][2]int{{1, 2}, {2, 1}, {3, 3}} {
		a, b := claimant("a", "x", seconds[0], "h.example.com"), claimant("b", "x", seconds[1], "h.example.com")
		both := []websitev1.Website{a, b}
		holders := 0
		for _, w := range both {
			if hostHolder(&w, both) == nil {
				holders++
			}
		}
		g.Expect(holders).To(Equal(1), "created at %v", seconds)
		g.Expect(claimsBefore(&a, &b)).NotTo(Equal(claimsBefore(&b, &a)), "a strict order, %v", seconds)
	}
}

func TestRefuseIngress(t *testing.T) {
	tests := []struct {
		name           string
		website        websitev1.Website
		refuseCatchAll bool
		refused        bool
	}{
		{name: "an Ingress of every host where they are allowed", website: catchAll("a", "site", 1)},
		{name: "an Ingress of every host where they are refused", website: catchAll("a", "site", 1), refuseCatchAll: true, refused: true},
		{name: "a named host where catch-alls are refused", website: claimant("a", "site", 1, "shop.example.com"), refuseCatchAll: true},
		{name: "no Ingress where catch-alls are refused", website: claimant("a", "site", 1, ""), refuseCatchAll: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := refuseIngress(&tt.website, tt.refuseCatchAll)
			if !tt.refused {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.reason).To(Equal(websitev1.InvalidSpecReason))
			g.Expect(c.message).To(HavePrefix("spec.ingress.host: Required value"))
			g.Expect(c.message).To(ContainSubstring("--allow-catch-all-ingress=false"))
		})
	}
}
