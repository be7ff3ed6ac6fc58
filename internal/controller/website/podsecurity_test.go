package website_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/podsecurity"
)

// The operator judges a Website's pod as the API server's PodSecurity
// admission would at the cluster's version: the pods its spec can shape
// (a user, a low port and its sysctl) pass at every version the library
// knows that clusters still run, and a pod that breaks the standard or is
// placed by hand is refused, naming the field.
func TestWebsitePodsAreJudgedAtTheClustersVersion(t *testing.T) {
	versions := []podsecurity.Version{podsecurity.Latest(), podsecurity.VersionOf("v1.37.2"), podsecurity.VersionOf("v1.30.1"), podsecurity.VersionOf("v1.25.0")}
	for _, opts := range [][]websitetest.Option{
		nil,
		{websitetest.WithPort(8080)},
		{websitetest.WithPort(443), websitetest.WithRunAsUser(1000), websitetest.WithReadinessPath("/")},
	} {
		d := decode[appsv1.Deployment](t, website.DesiredDeployment(websitetest.Website("site", "default", opts...)))
		for _, v := range versions {
			if problem := website.PodSecurityProblem(&d.Spec.Template, v); problem != "" {
				t.Errorf("refused at %s: %s", v, problem)
			}
		}
	}

	tests := map[string]struct {
		change func(*corev1.PodSpec)
		want   string
	}{
		"root": {func(p *corev1.PodSpec) { p.SecurityContext.RunAsUser = ptr.To(int64(0)) },
			`spec.template.spec: Forbidden: violates PodSecurity "restricted:v1.37": runAsUser=0`},
		"capability": {func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		},
			`spec.template.spec: Forbidden: violates PodSecurity "restricted:v1.37": unrestricted capabilities`},
		"node": {func(p *corev1.PodSpec) { p.NodeName = "control-plane-1" }, "spec.template.spec.nodeName: Forbidden"},
	}
	for name, tt := range tests {
		d := decode[appsv1.Deployment](t, website.DesiredDeployment(websitetest.Website("site", "default")))
		tt.change(&d.Spec.Template.Spec)
		if got := website.PodSecurityProblem(&d.Spec.Template, podsecurity.VersionOf("v1.37.2")); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: refusal %q, want it to start with %q", name, got, tt.want)
		}
	}
}
