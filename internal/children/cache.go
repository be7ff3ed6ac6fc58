package children

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/platform"
)

// ManagedSelector selects the objects the operator manages: those labelled
// with its name, or with its former name (children made before the rename,
// relabelled by their next update).
func ManagedSelector() labels.Selector {
	managed, err := labels.NewRequirement(platform.ManagedByLabel, selection.In, []string{platform.Name, platform.LegacyName})
	if err != nil {
		panic(err) // constant input
	}
	return labels.NewSelector().Add(*managed)
}

// ManagedLabels are the labels every child carries.
func ManagedLabels() map[string]string {
	return map[string]string{platform.ManagedByLabel: platform.Name}
}

// CacheSetting is how a controller asks the shared cache to hold one object
// type: the cache's setting, and the name of its transform. The cache holds
// one copy of each type, so two controllers that watch one type must
// transform it alike, and Go cannot tell two functions apart when they are
// closures of one function literal (every CacheConfig) or instances of one
// generic function of the same shape: the name tells.
type CacheSetting struct {
	cache.ByObject
	// TransformName names ByObject.Transform: one name, one function.
	TransformName string
}

// ByObject is the cache's part of settings, for the cache options of a
// manager that runs one controller in tests.
func ByObject(settings map[client.Object]CacheSetting) map[client.Object]cache.ByObject {
	out := make(map[client.Object]cache.ByObject, len(settings))
	for obj, setting := range settings {
		out[obj] = setting.ByObject
	}
	return out
}

// CacheConfig is the cache setting of a type the operator manages by its
// label (its children, and the pods and EndpointSlices that carry their
// labels): only managed objects, with managed fields kept only as far as
// they tell whether the operator's ownership needs an upgrade, without the
// field sets (see TrimManagedFields), and the strings that repeat across
// objects shared (see ShareMetadataStrings). transform, when not nil, trims
// the object further; name names it, package-qualified
// ("website.TrimPod"), so that the operator can tell two controllers'
// transforms of one type apart.
func CacheConfig(name string, transform toolscache.TransformFunc) CacheSetting {
	if transform == nil {
		return CacheSetting{
			ByObject:      cache.ByObject{Label: ManagedSelector(), Transform: trimChild},
			TransformName: "children.trimChild",
		}
	}
	trim := func(obj any) (any, error) {
		obj, err := trimChild(obj)
		if err != nil {
			return nil, err
		}
		return transform(obj)
	}
	return CacheSetting{
		ByObject:      cache.ByObject{Label: ManagedSelector(), Transform: trim},
		TransformName: "children.trimChild+" + name,
	}
}

// trimChild is the cache transform every child type gets.
func trimChild(obj any) (any, error) {
	obj, err := TrimManagedFields(obj)
	if err != nil {
		return nil, err
	}
	if accessor, ok := obj.(metav1.Object); ok {
		ShareMetadataStrings(accessor)
	}
	return obj, nil
}

// PartialAnnotation marks a child that the cache holds without fields that
// the comparison with its desired state reads: a cache transform made by
// PartialCopy left them out to save memory. The mark exists only in the
// operator's cache, never in the API server; its value names what was left
// out.
const PartialAnnotation = "example.com/partial-in-cache"

// PartialCopy is the cache transform of a child type T whose cached copy
// leaves out, by leaveOut, fields that only the comparison with its desired
// state reads; left names them. It marks the copy, so that the Manager reads
// the child from the API server before comparing it, which happens when its
// generation or the metadata the operator sets changed, and once per child
// after a restart; status updates need no comparison (see comparedState), so
// a rollout reads nothing. Without the mark the Manager would compare the
// incomplete copy, find it different and apply the child again.
func PartialCopy[T client.Object](left string, leaveOut func(T)) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		child, ok := obj.(T)
		if !ok {
			// Tombstones of deleted objects pass through untouched.
			return obj, nil
		}
		leaveOut(child)
		annotations := child.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[PartialAnnotation] = left
		child.SetAnnotations(annotations)
		return child, nil
	}
}

// isPartial reports whether obj came from a cache that left out some of its
// fields.
func isPartial(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[PartialAnnotation]
	return ok
}

// TrimManagedFields keeps of an object's managed fields only the operator's
// own entries, without their field sets: those that needsOwnershipUpgrade
// looks for (its create's, its former name's, which an apply does not yet
// own), and its apply's, which with its create's tell untouchedSinceCreated
// that the operator made the object. Who else manages fields, and what any
// entry owns, is read from the API server on the rare occasions it is
// needed (see upgradeOwnership). The entries kept hold constant strings, so
// that a cached object shares them instead of holding its own copies.
func TrimManagedFields(obj any) (any, error) {
	accessor, ok := obj.(metav1.Object)
	if !ok {
		// Tombstones of deleted objects pass through untouched.
		return obj, nil
	}
	entries := accessor.GetManagedFields()
	if len(entries) == 0 {
		return obj, nil
	}
	var kept []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if own, ok := ownershipToUpgrade(e); ok {
			kept = append(kept, own)
		} else if isOwnApply(e) {
			kept = append(kept, metav1.ManagedFieldsEntry{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationApply})
		}
	}
	accessor.SetManagedFields(kept)
	return obj, nil
}
