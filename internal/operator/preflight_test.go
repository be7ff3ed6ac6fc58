package operator

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"example.com/platform-operator/internal/controller/website"
)

// fakeCluster serves the built-in resources that the roles name, and the
// given custom resources.
func fakeCluster(custom ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	builtIn := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true}, {Name: "services", Namespaced: true},
			{Name: "events", Namespaced: true}, {Name: "namespaces"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true}}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "ingresses", Namespaced: true}}},
		{GroupVersion: "discovery.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "endpointslices", Namespaced: true}}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "events", Namespaced: true}}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "leases", Namespaced: true}}},
		{GroupVersion: "authentication.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "tokenreviews"}}},
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "subjectaccessreviews"}}},
	}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: append(builtIn, custom...)}}
}

var websiteCRD = &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
	{Name: "websites", Namespaced: true, Kind: "Website"},
	{Name: "websites/status", Namespaced: true, Kind: "Website"},
	{Name: "websites/scale", Namespaced: true, Kind: "Scale"},
}}

// The start-up checks with the real registry and roles, on a cluster that
// has only the Website component installed.
func TestPreflight(t *testing.T) {
	shortDiscoveryGrace(t)
	tests := []struct {
		name    string
		args    []string
		cluster *fakediscovery.FakeDiscovery
		denied  []string
		wantErr string
		// wantSkipped are the controllers of the registry that the plan
		// leaves out, with why.
		wantSkipped []skippedController
	}{
		{
			name:    "only the Website component installed: the others are skipped, saying why",
			cluster: fakeCluster(websiteCRD),
			wantSkipped: []skippedController{
				{name: "tenant", reason: "tenants (example.com/v1alpha1) is not installed in this cluster: apply the tenant component of deploy/ (deploy/components/tenant) first"},
				{name: "backupjob", reason: "backupjobs (example.com/v1alpha1) is not installed in this cluster: apply the backupjob component of deploy/ (deploy/components/backupjob) first"},
				{name: "postgrescluster", reason: "postgresclusters (example.com/v1alpha1) is not installed in this cluster: apply the postgrescluster component of deploy/ (deploy/components/postgrescluster) first"},
			},
		},
		{
			name:    "a controller asked for by name cannot run",
			args:    []string{"--controllers=website,tenant"},
			cluster: fakeCluster(websiteCRD),
			wantErr: "controller tenant, named in --controllers, cannot run: tenants (example.com/v1alpha1) is not installed in this cluster",
		},
		{
			name:    "no CRD installed",
			cluster: fakeCluster(),
			wantErr: "no controller to run: website: websites (example.com/v1) is not installed in this cluster",
		},
		{
			name:    "a permission missing",
			args:    []string{"--leader-elect", "--leader-election-namespace=ops"},
			cluster: fakeCluster(websiteCRD),
			denied:  []string{"update coordination.k8s.io/leases/ ops"},
			wantErr: "RBAC (403 Forbidden): the operator may not update leases.coordination.k8s.io in namespace ops; grant it what deploy/base/role.yaml grant",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts, err := ParseOptions(tt.args, env(nil), nil)
			g.Expect(err).NotTo(HaveOccurred())
			reviewer := &fakeReviewer{denied: tt.denied}
			probes := &probes{}

			p, _, err := preflight(context.Background(), opts, "https://10.0.0.1:6443", tt.cluster, reviewer, probes, logr.Discard())
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(controllerNames(p.run)).To(Equal([]string{website.Descriptor().Name}))
			g.Expect(p.skipped).To(ConsistOf(tt.wantSkipped))
			g.Expect(reviewer.reviews).To(BeNumerically(">", 0))
			g.Expect(probes.notReady(nil)).To(Equal("checking permissions"), "the last stage it went through")
		})
	}
}

// shortDiscoveryGrace makes the wait for missing APIs short for a test.
func shortDiscoveryGrace(t *testing.T) {
	grace, retry := discoveryGrace, discoveryRetry
	discoveryGrace, discoveryRetry = 200*time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { discoveryGrace, discoveryRetry = grace, retry })
}

// appearingAPIs is a cluster whose discovery lists more APIs from its nth
// answer on, as a kube-apiserver does while it registers CRDs after a start.
type appearingAPIs struct {
	*fakediscovery.FakeDiscovery
	answers, nth int
	later        []*metav1.APIResourceList
}

func (a *appearingAPIs) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	a.answers++
	if a.answers == a.nth {
		a.Resources = append(a.Resources, a.later...)
	}
	return a.FakeDiscovery.ServerGroupsAndResourcesWithContext(ctx)
}

// While discovery lists no selected controller's CRD, the start asks again:
// a controller whose CRD is listed only on the third answer runs, and with
// no CRD ever listed the start fails once the grace has passed. When some
// CRD is listed, the start does not wait for the others.
func TestPreflightWaitsForAPIsBeingRegistered(t *testing.T) {
	shortDiscoveryGrace(t)
	g := NewWithT(t)
	opts, err := ParseOptions([]string{"--controllers=website"}, env(nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &appearingAPIs{FakeDiscovery: fakeCluster(), nth: 3, later: []*metav1.APIResourceList{websiteCRD}}
	p, _, err := preflight(context.Background(), opts, "https://10.0.0.1:6443", cluster, &fakeReviewer{}, &probes{}, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controllerNames(p.run)).To(Equal([]string{website.Descriptor().Name}))
	g.Expect(cluster.answers).To(Equal(3), "asked until the CRD was listed, no more")

	cluster = &appearingAPIs{FakeDiscovery: fakeCluster(), nth: -1}
	start := time.Now()
	_, _, err = preflight(context.Background(), opts, "https://10.0.0.1:6443", cluster, &fakeReviewer{}, &probes{}, logr.Discard())
	g.Expect(err).To(MatchError(ContainSubstring("websites (example.com/v1) is not installed in this cluster")))
	g.Expect(time.Since(start)).To(BeNumerically(">=", discoveryGrace), "after the grace")
	g.Expect(cluster.answers).To(BeNumerically(">", 2))

	opts, err = ParseOptions(nil, env(nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	cluster = &appearingAPIs{FakeDiscovery: fakeCluster(websiteCRD), nth: -1}
	p, _, err = preflight(context.Background(), opts, "https://10.0.0.1:6443", cluster, &fakeReviewer{}, &probes{}, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controllerNames(p.run)).To(Equal([]string{website.Descriptor().Name}))
	g.Expect(cluster.answers).To(Equal(1), "the Website CRD is listed: no wait for the Tenant and BackupJob CRDs")
}

// The pods the controllers make are judged by the Pod Security Standards of
// the API server's version, as it tells it when the start waits for it.
func TestPreflightTakesThePodSecurityVersionOfTheAPIServer(t *testing.T) {
	shortDiscoveryGrace(t)
	g := NewWithT(t)
	opts, err := ParseOptions([]string{"--controllers=website"}, env(nil), nil)
	g.Expect(err).NotTo(HaveOccurred())
	cluster := fakeCluster(websiteCRD)
	cluster.FakedServerVersion = &version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.1-eks.2"}
	p, _, err := preflight(context.Background(), opts, "https://10.0.0.1:6443", cluster, &fakeReviewer{}, &probes{}, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.podSecurity.String()).To(Equal("v1.33"))
}
