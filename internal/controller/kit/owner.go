package kit

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EnqueueControllingOwner enqueues, for an event of a child, a reconcile of
// the object of kind owner that is the child's controller, as
// controller-runtime's EnqueueRequestForOwner with OnlyControllerOwner
// does. That handler asks the REST mapper for the owner's scope at every
// event, and the lookup allocates, at every event of every child of a
// burst. The operator knows the scope of its own
// kinds, which is part of their API; scope is meta.RESTScopeNameNamespace
// or meta.RESTScopeNameRoot.
func EnqueueControllingOwner(owner schema.GroupKind, scope meta.RESTScopeName) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		ref := metav1.GetControllerOfNoCopy(obj)
		if ref == nil || ref.Kind != owner.Kind {
			return nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != owner.Group {
			return nil
		}
		key := types.NamespacedName{Name: ref.Name}
		if scope == meta.RESTScopeNameNamespace {
			key.Namespace = obj.GetNamespace()
		}
		return []reconcile.Request{{NamespacedName: key}}
	})
}
