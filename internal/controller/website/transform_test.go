package website

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

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
