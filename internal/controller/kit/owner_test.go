package kit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A child's event reconciles the object of the owner's kind that controls
// it: in the child's namespace for a namespaced owner, without one for a
// cluster-scoped owner; owners that do not control it, and kinds of the
// same name in other groups, are not reconciled.
func TestChildEventsReconcileTheirControllingOwner(t *testing.T) {
	website := schema.GroupKind{Group: "example.com", Kind: "Website"}
	ref := func(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name), Controller: ptr.To(controller)}
	}
	for _, tc := range []struct {
		name   string
		scope  meta.RESTScopeName
		owners []metav1.OwnerReference
		want   []reconcile.Request
	}{
		{name: "namespaced owner", scope: meta.RESTScopeNameNamespace,
			owners: []metav1.OwnerReference{ref("example.com/v1", "Website", "site", true)},
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "site"}}}},
		{name: "cluster-scoped owner", scope: meta.RESTScopeNameRoot,
			owners: []metav1.OwnerReference{ref("example.com/v1alpha1", "Website", "team", true)},
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "team"}}}},
		{name: "the controller among other owners", scope: meta.RESTScopeNameNamespace,
			owners: []metav1.OwnerReference{ref("example.com/v1", "Website", "other", false), ref("example.com/v1", "Website", "site", true)},
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "site"}}}},
		{name: "an owner that is not the controller", scope: meta.RESTScopeNameNamespace,
			owners: []metav1.OwnerReference{ref("example.com/v1", "Website", "site", false)}},
		{name: "a controller of another kind", scope: meta.RESTScopeNameNamespace,
			owners: []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "site-abc", true)}},
		{name: "a kind of the same name in another group", scope: meta.RESTScopeNameNamespace,
			owners: []metav1.OwnerReference{ref("other.io/v1", "Website", "site", true)}},
		{name: "no owner", scope: meta.RESTScopeNameNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			child := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "site", OwnerReferences: tc.owners}}
			EnqueueControllingOwner(website, tc.scope).Create(context.Background(), event.CreateEvent{Object: child}, q)

			var got []reconcile.Request
			for q.Len() > 0 {
				item, _ := q.Get()
				got = append(got, item)
				q.Done(item)
			}
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("enqueued %v, want %v", got, tc.want)
			}
		})
	}
}
