package website_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/platform"
)

// FuzzChildren builds the children of arbitrary Websites, valid or not (the
// builders must not rely on the API server's validation), and checks the
// invariants that keep a Website from reaching beyond itself: every child is
// in the Website's namespace, named like it and controlled by it; the pod
// is never privileged, never on the host's namespaces or file system, never
// runs as another ServiceAccount, and meets the restricted Pod Security
// Standard. go test runs the seeds; make fuzz explores further.
func FuzzChildren(f *testing.F) {
	f.Add("nginx:1.25", int32(80), int32(1), "/", int64(0), "MODE", "prod", "www.example.com", "/", "nginx", "tls")
	f.Add("", int32(0), int32(-1), "", int64(-5), "", "", "", "", "", "")
	f.Add("nginx:1.25\nsecurityContext:\n  privileged: true", int32(65536), int32(1<<30), "healthz", int64(0), "A=B", "$(HOME)", "*.example.com", "docs", "", "x")
	f.Add("registry.example.com:5000/team/site@sha256:abc", int32(8080), int32(0), "/ready?x=1", int64(1000), "PATH", "/", "", "", "Class", "")
	f.Fuzz(func(t *testing.T, image string, port, replicas int32, readinessPath string, runAsUser int64,
		envName, envValue, host, path, className, tlsSecret string) {
		w := websitetest.Website("site", "tenant-a",
			websitetest.WithImage(image), websitetest.WithPort(port), websitetest.WithReplicas(replicas),
			websitetest.WithReadinessPath(readinessPath), websitetest.WithRunAsUser(runAsUser),
			websitetest.WithEnv(envName, envValue), websitetest.WithIngress(host, path, className, tlsSecret))

		deployment := decode[appsv1.Deployment](t, website.DesiredDeployment(w))
		service := decode[corev1.Service](t, website.DesiredService(w))
		ingress := decode[networkingv1.Ingress](t, website.DesiredIngress(w))
		for _, child := range []metav1.Object{deployment, service, ingress} {
			checkOwnedChild(t, w, child)
		}
		checkPod(t, &deployment.Spec.Template)
		if service.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service type %q", service.Spec.Type)
		}
		for _, rule := range ingress.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil || p.Backend.Service.Name != w.Name {
					t.Errorf("Ingress routes to %+v, not the Website's Service", p.Backend)
				}
			}
		}
	})
}

func checkOwnedChild(t *testing.T, w *websitev1.Website, child metav1.Object) {
	t.Helper()
	if child.GetNamespace() != w.Namespace || child.GetName() != w.Name {
		t.Errorf("child %s/%s, want %s/%s", child.GetNamespace(), child.GetName(), w.Namespace, w.Name)
	}
	refs := child.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != w.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("child %s is not controlled by the Website alone: %+v", child.GetName(), refs)
	}
	if child.GetLabels()[platform.ManagedByLabel] != platform.Name {
		t.Errorf("child %s lacks the managed-by label", child.GetName())
	}
}

func checkPod(t *testing.T, template *corev1.PodTemplateSpec) {
	t.Helper()
	spec := template.Spec
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("pod uses a host namespace")
	}
	if spec.ServiceAccountName != "" || spec.DeprecatedServiceAccount != "" {
		t.Errorf("pod runs as ServiceAccount %q", spec.ServiceAccountName)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("pod mounts a ServiceAccount token")
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir", v.Name)
		}
	}
	for _, c := range spec.Containers {
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || *sc.Privileged {
			t.Errorf("container %s may be privileged", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("container %s binds host port %d", c.Name, p.HostPort)
			}
		}
	}
	if problems := restrictedViolations(t, template); len(problems) > 0 {
		t.Errorf("violates the restricted Pod Security Standard: %v", problems)
	}
}
