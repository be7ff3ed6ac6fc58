package postgrescluster

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"example.com/platform-operator/api/v1alpha1"
)

// requestOf maps an object labelled for a cluster (a pod, a claim, the
// Lease) to a reconcile of that cluster.
func requestOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := clusterOf(obj)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// holderChanged passes the updates of a Lease whose holder changed: a
// renewal, every few seconds, is no news (the operator looks again when a
// lease would lapse).
var holderChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*coordinationv1.Lease)
	after, ok2 := e.ObjectNew.(*coordinationv1.Lease)
	if !ok1 || !ok2 {
		return true
	}
	return holderOf(before) != holderOf(after)
}}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// cordonChanged passes the updates of a Node that was cordoned or
// uncordoned: a drain begins or ends.
var cordonChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		return ok1 && ok2 && before.Spec.Unschedulable != after.Spec.Unschedulable
	},
}

// clustersOnNode maps a node to the clusters with an instance on it, by
// their reports.
func (r *Reconciler) clustersOnNode(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, node client.Object) []reconcile.Request {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.HasLabels{v1alpha1.PostgresClusterLabel}); err != nil {
			return nil
		}
		seen := map[types.NamespacedName]bool{}
		var out []reconcile.Request
		for i := range pods.Items {
			pod := &pods.Items[i]
			if report := reportOf(pod); report == nil || report.Node != node.GetName() {
				continue
			}
			key := types.NamespacedName{Namespace: pod.Namespace, Name: clusterOf(pod)}
			if !seen[key] {
				seen[key] = true
				out = append(out, reconcile.Request{NamespacedName: key})
			}
		}
		return out
	}
}
