package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/platform-operator/internal/controller"
)

var (
	websites   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "websites"}
	tenants    = schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "tenants"}
	backupjobs = schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "backupjobs"}
	snapshots  = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
)

var errServiceUnavailable = apierrors.NewServiceUnavailable("the server is currently unable to handle the request")

// testRegistry stands for the registry once every kind is in it.
var testRegistry = []controller.Descriptor{
	{Name: "website", Resource: websites, Subresources: []string{"status", "scale"}},
	{Name: "tenant", Resource: tenants, Subresources: []string{"status"}, ClusterWide: true},
	{Name: "backupjob", Resource: backupjobs, Subresources: []string{"status"}, OptionalAPIs: []schema.GroupVersionResource{snapshots}},
}

func TestSelectControllers(t *testing.T) {
	tests := []struct {
		flag         []string
		wantEnabled  []string
		wantExplicit []string
		wantErr      string
	}{
		{flag: []string{"*"}, wantEnabled: []string{"website", "tenant", "backupjob"}},
		{flag: []string{"website"}, wantEnabled: []string{"website"}, wantExplicit: []string{"website"}},
		{flag: []string{"*", "-tenant"}, wantEnabled: []string{"website", "backupjob"}},
		{flag: []string{"-tenant", "*"}, wantEnabled: []string{"website", "backupjob"}},
		{flag: []string{"*", "backupjob"}, wantEnabled: []string{"website", "tenant", "backupjob"}, wantExplicit: []string{"backupjob"}},
		{flag: []string{"backupjob", "website"}, wantEnabled: []string{"website", "backupjob"}, wantExplicit: []string{"website", "backupjob"}},
		// The first entry that names a controller wins, as in
		// kube-controller-manager.
		{flag: []string{"tenant", "-tenant", "website"}, wantEnabled: []string{"website", "tenant"}, wantExplicit: []string{"website", "tenant"}},
		{flag: []string{"-website", "website"}, wantErr: "leaves no controller to run"},
		{flag: []string{"nope"}, wantErr: `unknown controller "nope"; known controllers: website, tenant, backupjob (or * for all of them)`},
		{flag: []string{"*", "-nope"}, wantErr: `unknown controller "-nope"`},
		{flag: []string{""}, wantErr: `unknown controller ""`},
		{flag: []string{"-website", "-tenant", "-backupjob"}, wantErr: "--controllers=-website,-tenant,-backupjob leaves no controller to run; known controllers: website, tenant, backupjob"},
		{flag: []string{"-website"}, wantErr: "leaves no controller to run"},
	}
	for _, tt := range tests {
		t.Run(fmtFlag(tt.flag), func(t *testing.T) {
			g := NewWithT(t)
			sel, err := selectControllers(testRegistry, tt.flag)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(controllerNames(sel.enabled)).To(Equal(tt.wantEnabled))
			var explicit []string
			for _, d := range sel.enabled {
				if sel.explicit[d.Name] {
					explicit = append(explicit, d.Name)
				}
			}
			g.Expect(explicit).To(Equal(tt.wantExplicit))
		})
	}
}

func fmtFlag(entries []string) string {
	s := "--controllers="
	for i, e := range entries {
		if i > 0 {
			s += ","
		}
		s += e
	}
	return s
}

// served builds what discovery would return: resources by group version,
// "name/sub" for subresources.
func served(resources map[schema.GroupVersion][]string, namespaced bool) servedAPIs {
	s := servedAPIs{resources: map[schema.GroupVersion]map[string]metav1.APIResource{}, failed: map[schema.GroupVersion]error{}}
	for gv, names := range resources {
		s.resources[gv] = map[string]metav1.APIResource{}
		for _, name := range names {
			s.resources[gv][name] = metav1.APIResource{Name: name, Namespaced: namespaced, Kind: kindOf(name)}
		}
	}
	return s
}

func kindOf(resource string) string {
	return map[string]string{"websites": "Website", "tenants": "Tenant", "backupjobs": "BackupJob"}[resource]
}

var (
	everyKind = map[schema.GroupVersion][]string{
		websites.GroupVersion(): {"websites", "websites/status", "websites/scale"},
		tenants.GroupVersion():  {"tenants", "tenants/status", "backupjobs", "backupjobs/status"},
	}
	tutorialWebsiteOnly = map[schema.GroupVersion][]string{
		websites.GroupVersion(): {"websites"},
	}
)

func TestPlanControllers(t *testing.T) {
	tests := []struct {
		name        string
		flag        []string
		served      map[schema.GroupVersion][]string
		namespaces  []string
		wantRun     []string
		wantSkipped map[string]string
		wantErr     string
	}{
		{
			name:    "every CRD installed",
			flag:    []string{"*"},
			served:  everyKind,
			wantRun: []string{"website", "tenant", "backupjob"},
		},
		{
			name:    "only the Website component installed",
			flag:    []string{"*"},
			served:  map[schema.GroupVersion][]string{websites.GroupVersion(): {"websites", "websites/status", "websites/scale"}},
			wantRun: []string{"website"},
			wantSkipped: map[string]string{
				"tenant":    "tenants (example.com/v1alpha1) is not installed in this cluster: apply the tenant component of deploy/ (deploy/components/tenant) first",
				"backupjob": "backupjobs (example.com/v1alpha1) is not installed in this cluster: apply the backupjob component of deploy/ (deploy/components/backupjob) first",
			},
		},
		{
			name:       "a cluster-wide controller and --namespace",
			flag:       []string{"*"},
			served:     everyKind,
			namespaces: []string{"a", "b"},
			wantRun:    []string{"website", "backupjob"},
			wantSkipped: map[string]string{
				"tenant": "it needs every namespace, and --namespace limits the operator to a, b: run it without --namespace, or leave it out with --controllers=-tenant",
			},
		},
		{
			name:       "a cluster-wide controller named explicitly and --namespace",
			flag:       []string{"website", "tenant"},
			served:     everyKind,
			namespaces: []string{"a"},
			wantErr:    "controller tenant, named in --controllers, cannot run: it needs every namespace, and --namespace limits the operator to a",
		},
		{
			name:    "a controller named explicitly without its CRD",
			flag:    []string{"*", "tenant"},
			served:  map[schema.GroupVersion][]string{websites.GroupVersion(): {"websites", "websites/status", "websites/scale"}},
			wantErr: "controller tenant, named in --controllers, cannot run: tenants (example.com/v1alpha1) is not installed in this cluster: apply the tenant component of deploy/ (deploy/components/tenant) first",
		},
		{
			name:    "the tutorial's CRD, without subresources, and nothing else",
			flag:    []string{"*"},
			served:  tutorialWebsiteOnly,
			wantErr: "no controller to run: website: the installed websites.example.com CRD has no status subresource (is it an older or foreign CRD, such as the tutorial's crd.yaml?): apply the website component of deploy/ (deploy/components/website), which keeps every existing Website; tenant: tenants (example.com/v1alpha1) is not installed",
		},
		{
			name:    "no CRD at all",
			flag:    []string{"*"},
			served:  map[schema.GroupVersion][]string{},
			wantErr: "no controller to run: website: websites (example.com/v1) is not installed in this cluster: apply the website component of deploy/ (deploy/components/website) first; tenant: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sel, err := selectControllers(testRegistry, tt.flag)
			g.Expect(err).NotTo(HaveOccurred())
			p, err := planControllers(sel, served(tt.served, true), tt.namespaces)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(controllerNames(p.run)).To(Equal(tt.wantRun))
			skipped := map[string]string{}
			for _, s := range p.skipped {
				skipped[s.name] = s.reason
			}
			if tt.wantSkipped == nil {
				tt.wantSkipped = map[string]string{}
			}
			g.Expect(skipped).To(Equal(tt.wantSkipped))
		})
	}
}

func TestPlanReportsOptionalAPIs(t *testing.T) {
	g := NewWithT(t)
	sel, err := selectControllers(testRegistry, []string{"backupjob"})
	g.Expect(err).NotTo(HaveOccurred())

	p, err := planControllers(sel, served(everyKind, true), nil)
	g.Expect(err).NotTo(HaveOccurred(), "an absent optional API is not fatal")
	g.Expect(p.servedOptional["backupjob"]).To(Equal(map[schema.GroupVersionResource]bool{snapshots: false}))

	withSnapshots := map[schema.GroupVersion][]string{snapshots.GroupVersion(): {"volumesnapshots"}}
	for gv, names := range everyKind {
		withSnapshots[gv] = names
	}
	p, err = planControllers(sel, served(withSnapshots, true), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.servedOptional["backupjob"]).To(Equal(map[schema.GroupVersionResource]bool{snapshots: true}))
}

func TestPlanFailsWhenDiscoveryOfItsAPIFailed(t *testing.T) {
	g := NewWithT(t)
	sel, err := selectControllers(testRegistry, []string{"website"})
	g.Expect(err).NotTo(HaveOccurred())
	s := served(nil, true)
	s.failed[websites.GroupVersion()] = errServiceUnavailable
	_, err = planControllers(sel, s, nil)
	g.Expect(err).To(MatchError(ContainSubstring("discover the API example.com/v1 of controller website: the server is currently unable to handle the request")),
		"a controller is not skipped for a passing discovery failure")
}

// The registry is what the flag's help and errors name.
func TestRegistryNamesAreUnique(t *testing.T) {
	g := NewWithT(t)
	names := controllerNames(Controllers())
	g.Expect(names).To(ContainElement("website"))
	seen := map[string]bool{}
	for _, n := range names {
		g.Expect(seen[n]).To(BeFalse(), "controller %s registered twice", n)
		seen[n] = true
	}
}
