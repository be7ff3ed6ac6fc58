package website

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
)

// TrimDeployment is the cache transform for Deployments: it leaves out the
// pod template, about half of what a cached Deployment costs, which only the
// comparison with the desired state reads (children.PartialCopy). The
// status, the metadata, the replicas and the selector (which tells an
// adopted Deployment) stay.
var TrimDeployment = children.PartialCopy("spec.template", func(d *appsv1.Deployment) {
	d.Spec.Template = corev1.PodTemplateSpec{}
})

// TrimEndpointSlice is the cache transform for EndpointSlices: it keeps
// what finds a slice's Service (identity and labels) and what counts the
// pods it routes to (each endpoint's addresses, ready condition and pod),
// and drops ports, topology and managed fields.
func TrimEndpointSlice(obj any) (any, error) {
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		// Tombstones of deleted objects pass through untouched.
		return obj, nil
	}
	trimmed := &discoveryv1.EndpointSlice{
		TypeMeta:    slice.TypeMeta,
		ObjectMeta:  kit.TrimmedMeta(slice.ObjectMeta),
		AddressType: slice.AddressType,
	}
	if len(slice.Endpoints) > 0 {
		trimmed.Endpoints = make([]discoveryv1.Endpoint, len(slice.Endpoints))
	}
	for i, e := range slice.Endpoints {
		trimmed.Endpoints[i] = discoveryv1.Endpoint{
			Addresses:  e.Addresses,
			Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready},
		}
		if e.TargetRef != nil {
			trimmed.Endpoints[i].TargetRef = &corev1.ObjectReference{Kind: e.TargetRef.Kind, Name: e.TargetRef.Name}
		}
	}
	return trimmed, nil
}

// trimmedFormChanged passes the updates of EndpointSlices whose trimmed
// form changed. TrimEndpointSlice keeps of them only what the reconciler
// reads, so an update that leaves the trimmed form as it was (a slice's
// ports or topology) brings the Website no news, only a reconcile that
// would find what the last one found. The cache hands event handlers the
// transformed objects; creations and deletions always pass.
var trimmedFormChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return !sameBesidesVersion(e.ObjectOld, e.ObjectNew)
}}

// sameBesidesVersion reports whether a and b are equal but for their
// resourceVersion.
func sameBesidesVersion(a, b client.Object) bool {
	if a == nil || b == nil {
		return false
	}
	a, b = a.DeepCopyObject().(client.Object), b.DeepCopyObject().(client.Object)
	a.SetResourceVersion("")
	b.SetResourceVersion("")
	return equality.Semantic.DeepEqual(a, b)
}
