package children

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnerReference makes owner, of kind gvk, the controller of a child, so that
// the garbage collector deletes the child with its owner, even while the
// operator is down, and no other controller adopts it. Children that hold
// user data get no owner reference (see OwnedBy).
func OwnerReference(owner client.Object, gvk schema.GroupVersionKind) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(owner.GetName()).
		WithUID(owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
