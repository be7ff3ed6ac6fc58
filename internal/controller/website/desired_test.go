package website_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/platform"
)

// decode turns an apply configuration into the typed object it describes.
func decode[T any](t *testing.T, config any) *T {
	t.Helper()
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeploymentOfTheTutorialsWebsite(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("my-site", "default")

	d := decode[appsv1.Deployment](t, website.DesiredDeployment(w))

	g.Expect(d.Name).To(Equal("my-site"), "named like the Website, as in the tutorial")
	g.Expect(d.Namespace).To(Equal("default"))
	g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(1))))
	g.Expect(d.OwnerReferences).To(ConsistOf(HaveField("UID", w.UID)))
	g.Expect(d.OwnerReferences[0].Controller).To(HaveValue(BeTrue()))
	g.Expect(d.OwnerReferences[0].Kind).To(Equal("Website"))
	g.Expect(d.OwnerReferences[0].APIVersion).To(Equal("example.com/v1"))
	g.Expect(d.Labels).To(HaveKeyWithValue(platform.ManagedByLabel, platform.Name))
	g.Expect(d.Spec.Selector.MatchLabels).To(Equal(website.SelectorLabels(w)))
	g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(website.InstanceLabel, "my-site"))

	pod := d.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Name).To(Equal("website"))
	g.Expect(c.Image).To(Equal("nginx:1.25"))
	g.Expect(c.Ports).To(ConsistOf(corev1.ContainerPort{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}))
	g.Expect(c.ReadinessProbe.TCPSocket).NotTo(BeNil(), "without readinessPath a pod is ready once its port accepts connections")
	g.Expect(c.ReadinessProbe.TCPSocket.Port).To(Equal(intstr.FromString("http")))
	g.Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	g.Expect(pod.EnableServiceLinks).To(HaveValue(BeFalse()))
	g.Expect(pod.ServiceAccountName).To(BeEmpty())
}

func TestDeploymentFollowsTheSpec(t *testing.T) {
	tests := []struct {
		name    string
		website []websitetest.Option
		check   func(g Gomega, d *appsv1.Deployment)
	}{
		{
			name:    "replicas",
			website: []websitetest.Option{websitetest.WithReplicas(3)},
			check: func(g Gomega, d *appsv1.Deployment) {
				g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(3))))
			},
		},
		{
			name:    "scaled to zero",
			website: []websitetest.Option{websitetest.WithReplicas(0)},
			check: func(g Gomega, d *appsv1.Deployment) {
				g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(0))))
			},
		},
		{
			name:    "unprivileged port needs no sysctl",
			website: []websitetest.Option{websitetest.WithPort(8080)},
			check: func(g Gomega, d *appsv1.Deployment) {
				g.Expect(d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(8080)))
				g.Expect(d.Spec.Template.Spec.SecurityContext.Sysctls).To(BeEmpty())
			},
		},
		{
			name:    "port 80 opens low ports to the non-root user",
			website: []websitetest.Option{websitetest.WithPort(80)},
			check: func(g Gomega, d *appsv1.Deployment) {
				g.Expect(d.Spec.Template.Spec.SecurityContext.Sysctls).To(ConsistOf(
					corev1.Sysctl{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}))
			},
		},
		{
			name:    "readiness path",
			website: []websitetest.Option{websitetest.WithReadinessPath("/healthz")},
			check: func(g Gomega, d *appsv1.Deployment) {
				probe := d.Spec.Template.Spec.Containers[0].ReadinessProbe
				g.Expect(probe.HTTPGet).NotTo(BeNil())
				g.Expect(probe.HTTPGet.Path).To(Equal("/healthz"))
				g.Expect(probe.HTTPGet.Port).To(Equal(intstr.FromString("http")))
				g.Expect(probe.TCPSocket).To(BeNil())
			},
		},
		{
			name:    "environment",
			website: []websitetest.Option{websitetest.WithEnv("MODE", "prod"), websitetest.WithSecretEnv("TOKEN", "site-secrets", "token")},
			check: func(g Gomega, d *appsv1.Deployment) {
				g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(Equal([]corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "site-secrets"}, Key: "token",
					}}},
				}))
			},
		},
		{
			name: "resources",
			website: []websitetest.Option{websitetest.WithResources(
				map[corev1.ResourceName]string{corev1.ResourceCPU: "100m"},
				map[corev1.ResourceName]string{corev1.ResourceMemory: "128Mi"})},
			check: func(g Gomega, d *appsv1.Deployment) {
				r := d.Spec.Template.Spec.Containers[0].Resources
				g.Expect(r.Requests.Cpu().String()).To(Equal("100m"))
				g.Expect(r.Limits.Memory().String()).To(Equal("128Mi"))
			},
		},
		{
			name:    "run as another user",
			website: []websitetest.Option{websitetest.WithRunAsUser(1000)},
			check: func(g Gomega, d *appsv1.Deployment) {
				sc := d.Spec.Template.Spec.SecurityContext
				g.Expect(sc.RunAsUser).To(HaveValue(Equal(int64(1000))))
				g.Expect(sc.RunAsGroup).To(HaveValue(Equal(int64(1000))))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := websitetest.Website("site", "team-a", tt.website...)
			tt.check(NewWithT(t), decode[appsv1.Deployment](t, website.DesiredDeployment(w)))
		})
	}
}

// The pod template meets the restricted Pod Security Standard, checked with
// the same code as the API server's PodSecurity admission.
func TestPodMeetsTheRestrictedPodSecurityStandard(t *testing.T) {
	for _, opts := range [][]websitetest.Option{
		nil,
		{websitetest.WithPort(8080)},
		{websitetest.WithRunAsUser(1000), websitetest.WithReadinessPath("/")},
	} {
		w := websitetest.Website("site", "default", opts...)
		d := decode[appsv1.Deployment](t, website.DesiredDeployment(w))
		if problems := restrictedViolations(t, &d.Spec.Template); len(problems) > 0 {
			t.Errorf("port %d: violates the restricted Pod Security Standard: %v", w.Spec.Port, problems)
		}
	}

	// The check itself works: a privileged, root pod fails it.
	control := decode[appsv1.Deployment](t, website.DesiredDeployment(websitetest.Website("site", "default")))
	control.Spec.Template.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
	control.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	if len(restrictedViolations(t, &control.Spec.Template)) == 0 {
		t.Error("a privileged pod passed the restricted check")
	}
}

func restrictedViolations(t *testing.T, template *corev1.PodTemplateSpec) []string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, result := range evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()},
		&template.ObjectMeta, &template.Spec) {
		if !result.Allowed {
			problems = append(problems, result.ForbiddenReason+": "+result.ForbiddenDetail)
		}
	}
	return problems
}

// The hardening of the container, which the tutorial's nginx:1.25 survives
// because it only writes to the emptyDirs mounted at its cache and pid
// folders.
func TestContainerIsHardened(t *testing.T) {
	g := NewWithT(t)
	d := decode[appsv1.Deployment](t, website.DesiredDeployment(websitetest.Website("site", "default")))
	pod := d.Spec.Template.Spec
	sc := pod.Containers[0].SecurityContext

	g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(sc.Privileged).To(HaveValue(BeFalse()))
	g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(sc.Capabilities.Add).To(BeEmpty())
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SecurityContext.RunAsUser).To(HaveValue(Equal(website.DefaultRunAsUser)))
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	var mounts []string
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	g.Expect(mounts).To(ConsistOf("/tmp", "/var/cache/nginx", "/var/run"))
	for _, v := range pod.Volumes {
		g.Expect(v.EmptyDir).NotTo(BeNil(), "volume %s", v.Name)
	}
}

// The children manager applies a child again when its desired state, as
// JSON, changes; it must change with the spec only.
func TestDesiredDeploymentChangesWithTheSpecOnly(t *testing.T) {
	g := NewWithT(t)
	hash := func(w any) string {
		data, err := json.Marshal(w)
		g.Expect(err).NotTo(HaveOccurred())
		return string(data)
	}
	base := websitetest.Website("site", "default")
	g.Expect(hash(website.DesiredDeployment(base))).To(Equal(hash(website.DesiredDeployment(websitetest.Website("site", "default")))),
		"the same spec gives the same desired state")

	relabelled := websitetest.Website("site", "default")
	relabelled.Labels = map[string]string{"team": "web"}
	relabelled.ResourceVersion = "42"
	g.Expect(hash(website.DesiredDeployment(relabelled))).To(Equal(hash(website.DesiredDeployment(base))),
		"metadata of the Website that does not reach the Deployment leaves it alone")

	for name, changed := range map[string]*websitetest.Option{
		"image":    ptr.To(websitetest.WithImage("nginx:1.27")),
		"port":     ptr.To(websitetest.WithPort(8080)),
		"replicas": ptr.To(websitetest.WithReplicas(2)),
		"env":      ptr.To(websitetest.WithEnv("A", "b")),
	} {
		g.Expect(hash(website.DesiredDeployment(websitetest.Website("site", "default", *changed)))).NotTo(Equal(hash(website.DesiredDeployment(base))), name)
	}
}

func TestService(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("my-site", "default", websitetest.WithPort(8080))

	s := decode[corev1.Service](t, website.DesiredService(w))

	g.Expect(s.Name).To(Equal("my-site"))
	g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(s.Spec.Selector).To(Equal(website.SelectorLabels(w)))
	g.Expect(s.Spec.Ports).To(ConsistOf(corev1.ServicePort{
		Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"),
	}), "port 80 of the Service reaches the container's port, whatever its number")
	g.Expect(s.OwnerReferences).To(ConsistOf(HaveField("UID", w.UID)))
	g.Expect(website.ServiceURL(w, "cluster.local")).To(Equal("http://my-site.default.svc.cluster.local"))
}

func TestIngress(t *testing.T) {
	tests := []struct {
		name     string
		opts     []websitetest.Option
		wantNone bool
		check    func(g Gomega, i *networkingv1.Ingress)
		url      string
	}{
		{name: "none unless asked for", wantNone: true},
		{
			name: "host, path and class",
			opts: []websitetest.Option{websitetest.WithIngress("www.example.com", "/docs", "nginx", "")},
			url:  "http://www.example.com/docs",
			check: func(g Gomega, i *networkingv1.Ingress) {
				g.Expect(i.Spec.IngressClassName).To(HaveValue(Equal("nginx")))
				g.Expect(i.Spec.Rules).To(HaveLen(1))
				g.Expect(i.Spec.Rules[0].Host).To(Equal("www.example.com"))
				path := i.Spec.Rules[0].HTTP.Paths[0]
				g.Expect(path.Path).To(Equal("/docs"))
				g.Expect(path.PathType).To(HaveValue(Equal(networkingv1.PathTypePrefix)))
				g.Expect(path.Backend.Service.Name).To(Equal("site"))
				g.Expect(path.Backend.Service.Port.Name).To(Equal("http"))
				g.Expect(i.Spec.TLS).To(BeEmpty())
			},
		},
		{
			name: "TLS",
			opts: []websitetest.Option{websitetest.WithIngress("www.example.com", "", "", "www-tls")},
			url:  "https://www.example.com",
			check: func(g Gomega, i *networkingv1.Ingress) {
				g.Expect(i.Spec.TLS).To(ConsistOf(networkingv1.IngressTLS{Hosts: []string{"www.example.com"}, SecretName: "www-tls"}))
				g.Expect(i.Spec.Rules[0].HTTP.Paths[0].Path).To(Equal("/"))
				g.Expect(i.Spec.IngressClassName).To(BeNil(), "the cluster's default class")
			},
		},
		{
			name: "any host",
			opts: []websitetest.Option{websitetest.WithIngress("", "/", "", "")},
			url:  "",
			check: func(g Gomega, i *networkingv1.Ingress) {
				g.Expect(i.Spec.Rules[0].Host).To(BeEmpty())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := websitetest.Website("site", "default", tt.opts...)
			config := website.DesiredIngress(w)
			if tt.wantNone {
				g.Expect(config).To(BeNil())
				return
			}
			i := decode[networkingv1.Ingress](t, config)
			g.Expect(i.OwnerReferences).To(ConsistOf(HaveField("UID", w.UID)))
			tt.check(g, i)
			g.Expect(website.IngressURL(w)).To(Equal(tt.url))
		})
	}
}
