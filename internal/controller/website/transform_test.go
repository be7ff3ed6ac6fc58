package website

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// A cached Deployment keeps what a reconcile reads besides the comparison
// with the desired state: its status, generation, metadata, replicas and
// selector; its pod template is left out and the object says so.
func TestTrimDeploymentKeepsWhatTheStatusAndTheAdoptionRead(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("site", "team", websitetest.WithReplicas(3))
	full := &appsv1.Deployment{}
	data, err := json.Marshal(DesiredAdoptedDeployment(w))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(data, full)).To(Succeed())
	full.Generation = 4
	full.Annotations = map[string]string{children.ConfigHashAnnotation: "abc", "deployment.kubernetes.io/revision": "2"}
	full.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 4, Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet site-abc has timed out progressing.",
		}},
	}
	g.Expect(full.Spec.Template.Spec.Containers).NotTo(BeEmpty())

	out, err := TrimDeployment(full.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := out.(*appsv1.Deployment)

	g.Expect(trimmed.Spec.Template).To(Equal(corev1.PodTemplateSpec{}))
	g.Expect(trimmed.Annotations).To(HaveKey(children.PartialAnnotation))
	g.Expect(trimmed.Status).To(Equal(full.Status))
	g.Expect(trimmed.Generation).To(Equal(full.Generation))
	g.Expect(trimmed.Labels).To(Equal(full.Labels))
	g.Expect(trimmed.OwnerReferences).To(Equal(full.OwnerReferences))
	g.Expect(trimmed.Spec.Replicas).To(Equal(full.Spec.Replicas))
	g.Expect(hasTutorialSelector(w, trimmed)).To(BeTrue())
	g.Expect(deploymentProblem(trimmed)).To(Equal(deploymentProblem(full)))
	g.Expect(deploymentProblem(full)).NotTo(BeNil())
	for key, value := range full.Annotations {
		g.Expect(trimmed.Annotations).To(HaveKeyWithValue(key, value))
	}
}

// A cached Service keeps its metadata and status, which tell that it exists
// and whose it is; its spec is left out and the object says so.
func TestTrimServiceLeavesOutTheSpec(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("site", "team")
	full := &corev1.Service{}
	data, err := json.Marshal(DesiredService(w))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(data, full)).To(Succeed())
	full.ResourceVersion = "12"
	full.Annotations = map[string]string{children.ConfigHashAnnotation: "abc"}
	full.Spec.ClusterIP = "10.0.0.7"
	g.Expect(full.Spec.Selector).NotTo(BeEmpty())

	out, err := kit.TrimService(full.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := out.(*corev1.Service)

	g.Expect(trimmed.Spec).To(Equal(corev1.ServiceSpec{}))
	g.Expect(trimmed.Annotations).To(HaveKeyWithValue(children.PartialAnnotation, "spec"))
	g.Expect(trimmed.Annotations).To(HaveKeyWithValue(children.ConfigHashAnnotation, "abc"))
	g.Expect(trimmed.Labels).To(Equal(full.Labels))
	g.Expect(trimmed.OwnerReferences).To(Equal(full.OwnerReferences))
	g.Expect(trimmed.ResourceVersion).To(Equal(full.ResourceVersion))
}

// The trimmed slices keep what indexes them and what the status counts: a
// reconcile sees the same Service and the same routed pods as with the
// whole slices.
func TestTrimEndpointSlice(t *testing.T) {
	g := NewWithT(t)
	deleted := metav1.Now()
	slices := []discoveryv1.EndpointSlice{
		{
			ObjectMeta: metav1.ObjectMeta{
				Name: "site-abcde", Namespace: "team", UID: "u1", ResourceVersion: "7",
				Labels:            map[string]string{NameLabel: AppName, discoveryv1.LabelServiceName: "site"},
				Annotations:       map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "x"},
				OwnerReferences:   []metav1.OwnerReference{{Kind: "Service", Name: "site"}},
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "endpointslice-controller"}},
				DeletionTimestamp: &deleted,
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "site-1", Namespace: "team", UID: "p1"}, NodeName: ptr.To("node-1")},
				{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "site-2"}},
				{Addresses: []string{"10.0.0.3"}}, // no condition: ready, no pod
			},
		},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "team"}},
	}

	var trimmed []discoveryv1.EndpointSlice
	for i := range slices {
		out, err := TrimEndpointSlice(slices[i].DeepCopy())
		g.Expect(err).NotTo(HaveOccurred())
		slice := out.(*discoveryv1.EndpointSlice)
		g.Expect(slice.Name).To(Equal(slices[i].Name))
		g.Expect(slice.Labels).To(Equal(slices[i].Labels))
		g.Expect(slice.ResourceVersion).To(Equal(slices[i].ResourceVersion))
		g.Expect(slice.DeletionTimestamp).To(Equal(slices[i].DeletionTimestamp))
		g.Expect(slice.ManagedFields).To(BeEmpty())
		g.Expect(slice.Ports).To(BeEmpty())
		trimmed = append(trimmed, *slice)
	}
	g.Expect(serviceOfSliceLabels(trimmed[0].Labels)).To(Equal("site"))
	g.Expect(readyEndpointPods(slices)).To(BeEquivalentTo(2))
	g.Expect(readyEndpointPods(trimmed)).To(Equal(readyEndpointPods(slices)))

	tombstone := "not an EndpointSlice"
	out, err := TrimEndpointSlice(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}

// Updates of slices that leave their trimmed form as it was do not reach
// the reconciler; any change to what it reads does, and so do creations and
// deletions.
func TestOnlyUpdatesOfTheTrimmedFormPass(t *testing.T) {
	baseSlice := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "site-abcde", Namespace: "team", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "site"}},
			Ports:      []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "site-1"}}},
		}
	}
	cases := []struct {
		name   string
		before client.Object
		change func(client.Object)
		passes bool
	}{
		{"slice's ports", baseSlice(), func(o client.Object) { o.(*discoveryv1.EndpointSlice).Ports[0].Port = ptr.To[int32](8080) }, false},
		{"slice's endpoint serving", baseSlice(), func(o client.Object) {
			o.(*discoveryv1.EndpointSlice).Endpoints[0].Conditions.Serving = ptr.To(true)
		}, false},
		{"slice's endpoint ready", baseSlice(), func(o client.Object) {
			o.(*discoveryv1.EndpointSlice).Endpoints[0].Conditions.Ready = ptr.To(true)
		}, true},
		{"slice's new endpoint", baseSlice(), func(o client.Object) {
			s := o.(*discoveryv1.EndpointSlice)
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
		}, true},
	}
	trim := func(g Gomega, o client.Object) client.Object {
		out, err := TrimEndpointSlice(o)
		g.Expect(err).NotTo(HaveOccurred())
		return out.(client.Object)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			after := c.before.DeepCopyObject().(client.Object)
			c.change(after)
			after.SetResourceVersion("2")
			old, updated := trim(g, c.before.DeepCopyObject().(client.Object)), trim(g, after)
			g.Expect(trimmedFormChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})).To(Equal(c.passes))
			g.Expect(trimmedFormChanged.Create(event.CreateEvent{Object: updated})).To(BeTrue())
			g.Expect(trimmedFormChanged.Delete(event.DeleteEvent{Object: updated})).To(BeTrue())
		})
	}
}
