package website_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/platform"
)

// A field the operator set when it created the Deployment goes away when
// the spec no longer asks for it: the create's field ownership was
// converted to server-side apply's.
func TestRemovingFieldsFromTheSpecRemovesThemFromTheDeployment(t *testing.T) {
	needsAPIServer(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	createWebsite(t, websitetest.Website("site", ns,
		websitetest.WithEnv("KEEP", "1"), websitetest.WithEnv("DROP", "2"), websitetest.WithEnv("EMPTY", ""),
		websitetest.WithResources(map[corev1.ResourceName]string{"cpu": "100m"}, map[corev1.ResourceName]string{"cpu": "1", "memory": "128Mi"}),
		websitetest.WithReadinessPath("/healthz")))
	g.Eventually(func(g Gomega) {
		c := getDeployment(g, ctx, ns, "site").Spec.Template.Spec.Containers[0]
		g.Expect(c.Env).To(HaveLen(3))
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
		g.Expect(c.ReadinessProbe.HTTPGet).NotTo(BeNil())
	}).WithTimeout(timeout).Should(Succeed())

	updateWebsite(g, ctx, ns, "site", func(w *websitev1.Website) {
		w.Spec.Env = w.Spec.Env[:1]
		w.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: w.Spec.Resources.Limits[corev1.ResourceCPU]}
		w.Spec.ReadinessPath = ""
	})
	g.Eventually(func(g Gomega) {
		c := getDeployment(g, ctx, ns, "site").Spec.Template.Spec.Containers[0]
		g.Expect(c.Env).To(ConsistOf(HaveField("Name", "KEEP")))
		g.Expect(c.Resources.Limits).NotTo(HaveKey(corev1.ResourceMemory))
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceCPU))
		g.Expect(c.ReadinessProbe.HTTPGet).To(BeNil())
		g.Expect(c.ReadinessProbe.TCPSocket).NotTo(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
}

// Each hand edit of a field the operator sets is put back, whatever the
// merge semantics of the field, and the Website ends Ready and not
// Degraded.
func TestHandEditsOfChildrenAreRestored(t *testing.T) {
	needsAPIServer(t)
	t.Parallel()
	tests := []struct {
		name     string
		child    client.Object
		edit     func(client.Object)
		restored func(Gomega, client.Object)
		// event is the reason of the event that reports the repair.
		event string
	}{
		{
			name:  "Service selector gains a key (an atomic map)",
			child: &corev1.Service{},
			edit:  func(o client.Object) { o.(*corev1.Service).Spec.Selector["extra"] = "x" },
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.(*corev1.Service).Spec.Selector).NotTo(HaveKey("extra"))
			},
			event: "ServiceRestored",
		},
		{
			name:  "Service port edited (an apply alone would give two ports named http)",
			child: &corev1.Service{},
			edit:  func(o client.Object) { o.(*corev1.Service).Spec.Ports[0].Port = 8080 },
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.(*corev1.Service).Spec.Ports).To(ConsistOf(HaveField("Port", int32(80))))
			},
			event: "ServiceReplaced",
		},
		{
			name:  "Service port's target changed",
			child: &corev1.Service{},
			edit:  func(o client.Object) { o.(*corev1.Service).Spec.Ports[0].TargetPort = intstr.FromInt32(9090) },
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.(*corev1.Service).Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("http")))
			},
		},
		{
			name:  "container port changed",
			child: &appsv1.Deployment{},
			edit:  func(o client.Object) { container(o).Ports[0].ContainerPort = 9999 },
			restored: func(g Gomega, o client.Object) {
				g.Expect(container(o).Ports).To(ConsistOf(HaveField("ContainerPort", int32(80))))
			},
		},
		{
			name:  "env value changed and a variable added",
			child: &appsv1.Deployment{},
			edit: func(o client.Object) {
				c := container(o)
				c.Env[0].Value = "changed"
				c.Env = append(c.Env, corev1.EnvVar{Name: "ADDED", Value: "by hand"})
			},
			restored: func(g Gomega, o client.Object) {
				g.Expect(container(o).Env).To(ContainElement(corev1.EnvVar{Name: "MODE", Value: "prod"}))
			},
		},
		{
			name:  "empty env value given one",
			child: &appsv1.Deployment{},
			edit: func(o client.Object) {
				for i := range container(o).Env {
					if container(o).Env[i].Name == "EMPTY" {
						container(o).Env[i].Value = "not empty"
					}
				}
			},
			restored: func(g Gomega, o client.Object) {
				g.Expect(container(o).Env).To(ContainElement(corev1.EnvVar{Name: "EMPTY"}))
			},
		},
		{
			name:  "readiness probe changed",
			child: &appsv1.Deployment{},
			edit: func(o client.Object) {
				container(o).ReadinessProbe.TCPSocket = nil
				container(o).ReadinessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
			},
			restored: func(g Gomega, o client.Object) {
				g.Expect(container(o).ReadinessProbe.TCPSocket).NotTo(BeNil())
				g.Expect(container(o).ReadinessProbe.Exec).To(BeNil())
			},
		},
		{
			name:  "security context loosened",
			child: &appsv1.Deployment{},
			edit: func(o client.Object) {
				sc := container(o).SecurityContext
				sc.AllowPrivilegeEscalation = ptr.To(true)
				sc.Capabilities.Drop = nil
				sc.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
			},
			restored: func(g Gomega, o client.Object) {
				sc := container(o).SecurityContext
				g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
				g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
			},
		},
		{
			name:  "the managed-by label removed: the Deployment leaves the operator's cache",
			child: &appsv1.Deployment{},
			edit:  func(o client.Object) { delete(o.(*appsv1.Deployment).Labels, platform.ManagedByLabel) },
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.GetLabels()).To(HaveKeyWithValue(platform.ManagedByLabel, platform.Name))
			},
		},
		{
			name:  "Ingress rule added (an atomic list)",
			child: &networkingv1.Ingress{},
			edit: func(o client.Object) {
				i := o.(*networkingv1.Ingress)
				i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: "evil.example.com", IngressRuleValue: i.Spec.Rules[0].IngressRuleValue})
			},
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.(*networkingv1.Ingress).Spec.Rules).To(ConsistOf(HaveField("Host", "www.example.com")))
			},
		},
		{
			name:  "Ingress TLS secret changed",
			child: &networkingv1.Ingress{},
			edit:  func(o client.Object) { o.(*networkingv1.Ingress).Spec.TLS[0].SecretName = "other" },
			restored: func(g Gomega, o client.Object) {
				g.Expect(o.(*networkingv1.Ingress).Spec.TLS).To(ConsistOf(HaveField("SecretName", "www-tls")))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := t.Context()
			ns := newNamespace(t)
			createWebsite(t, websitetest.Website("site", ns, websitetest.WithEnv("MODE", "prod"), websitetest.WithEnv("EMPTY", ""),
				websitetest.WithIngress("www.example.com", "/", "", "www-tls")))
			key := types.NamespacedName{Namespace: ns, Name: "site"}
			g.Eventually(func(g Gomega) { markRolledOut(g, ctx, getDeployment(g, ctx, ns, "site")) }).WithTimeout(timeout).Should(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(condition(getWebsite(g, ctx, ns, "site"), websitev1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
				g.Expect(k8sClient.Get(ctx, key, tt.child)).To(Succeed())
			}).WithTimeout(timeout).Should(Succeed())

			before := writes.count(ns)
			// As kubectl edit would: an update by another field manager.
			g.Eventually(func() error {
				if err := k8sClient.Get(ctx, key, tt.child); err != nil {
					return err
				}
				tt.edit(tt.child)
				return k8sClient.Update(ctx, tt.child, client.FieldOwner("kubectl-edit"))
			}).WithTimeout(timeout).Should(Succeed())

			g.Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, key, tt.child)).To(Succeed())
				tt.restored(g, tt.child)
			}).WithTimeout(timeout).Should(Succeed())
			g.Expect(writes.count(ns)).To(BeNumerically(">", before), "the operator repaired the child")
			if tt.event != "" {
				g.Eventually(func(g Gomega) {
					g.Expect(eventReasons(g, ctx, ns, "site")).To(ContainElement(tt.event))
				}).WithTimeout(timeout).Should(Succeed())
			}
			g.Eventually(func(g Gomega) {
				// The edit and the repair changed the Deployment's generation.
				// Played every 250 ms, not at Gomega's 10 ms: each status write
				// of the test is a write the reconciler races with.
				d := getDeployment(g, ctx, ns, "site")
				markRolledOut(g, ctx, d)
				w := getWebsite(g, ctx, ns, "site")
				ready := condition(w, websitev1.ReadyCondition)
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s (events: %v; Deployment generation %d, labels %v, owners %v)",
					ready.Reason, ready.Message, eventReasons(g, ctx, ns, "site"), d.Generation, d.Labels, d.OwnerReferences)
				degraded := condition(w, websitev1.DegradedCondition)
				g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse), "%s: %s", degraded.Reason, degraded.Message)
			}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		})
	}
}

func container(o client.Object) *corev1.Container {
	return &o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
}

// A Website that nobody touches costs no write, however often it is
// reconciled: an empty env value is no reason to apply again.
func TestQuietWebsiteWritesNothing(t *testing.T) {
	needsAPIServer(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	createWebsite(t, websitetest.Website("site", ns, websitetest.WithReplicas(2), websitetest.WithEnv("EMPTY", ""),
		websitetest.WithIngress("www.example.com", "/", "", "www-tls")))
	g.Eventually(func(g Gomega) { markRolledOut(g, ctx, getDeployment(g, ctx, ns, "site")) }).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getWebsite(g, ctx, ns, "site"), websitev1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
	caughtUp(t, ns, "site")

	// 60 reconciles over at least 30 s.
	var written []string
	for range 60 {
		written = append(written, reconcileWrites(g, ctx, reconciler, types.NamespacedName{Namespace: ns, Name: "site"}, 1)...)
		time.Sleep(500 * time.Millisecond)
	}
	g.Expect(written).To(BeEmpty())
}

// theirService is a Service named site in ns that is someone else's: no
// owner, none of the operator's labels, another port.
func theirService(ns string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}
}

// An object that someone else creates between the operator's look into its
// cache and its create is refused by the API server and reported as a
// conflict; it is never adopted or changed.
func TestObjectCreatedBetweenCacheMissAndCreateIsAConflict(t *testing.T) {
	needsAPIServer(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	theirs := theirService(ns)
	writes.onCreate(ns, func(ctx context.Context, obj client.Object) {
		if _, ok := obj.(*corev1.Service); ok {
			_ = k8sClient.Create(ctx, theirs.DeepCopy())
		}
	})
	createWebsite(t, websitetest.Website("site", ns))

	g.Eventually(func(g Gomega) {
		w := getWebsite(g, ctx, ns, "site")
		g.Expect(condition(w, websitev1.ReadyCondition).Reason).To(Equal(websitev1.ServiceConflictReason))
		g.Expect(condition(w, websitev1.DegradedCondition).Message).To(ContainSubstring("Service site already exists"))
	}).WithTimeout(timeout).Should(Succeed())
	got := &corev1.Service{}
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "site"}, got)).To(Succeed())
	g.Expect(got.OwnerReferences).To(BeEmpty())
	g.Expect(got.Labels).NotTo(HaveKey(platform.ManagedByLabel))
	g.Expect(got.Spec.Ports).To(ConsistOf(HaveField("Port", int32(443))))
}

// Ready means reachable: a Service that routes to fewer pods than are
// available keeps the Website from Ready.
func TestWebsiteIsNotReadyWhileItsServiceRoutesToNoPod(t *testing.T) {
	needsAPIServer(t)
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	createWebsite(t, websitetest.Website("site", ns, websitetest.WithReplicas(2)))
	g.Eventually(func(g Gomega) { markRolledOut(g, ctx, getDeployment(g, ctx, ns, "site")) }).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getWebsite(g, ctx, ns, "site"), websitev1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())

	setEndpoints(g, ctx, ns, "site", 0)
	g.Eventually(func(g Gomega) {
		ready := condition(getWebsite(g, ctx, ns, "site"), websitev1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(websitev1.EndpointsNotReadyReason))
		g.Expect(ready.Message).To(Equal("Service site routes to 0 of 2 available pods"))
	}).WithTimeout(timeout).Should(Succeed())

	setEndpoints(g, ctx, ns, "site", 2)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getWebsite(g, ctx, ns, "site"), websitev1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
}
