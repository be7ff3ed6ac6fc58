package postgrescluster

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// ensureShared ensures what the instances share: the instance managers'
// access, the Services, the disruption budgets (deleting those no longer
// wanted) and the primary's Lease.
func (r *Reconciler) ensureShared(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) {
	out.record(r.Children.Ensure(ctx, pg, DesiredAccount(pg), &corev1.ServiceAccount{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, DesiredRole(pg), &rbacv1.Role{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, DesiredRoleBinding(pg), &rbacv1.RoleBinding{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredHeadlessService(pg), &corev1.Service{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredRoleService(pg, pgspec.WriteService(pg.Name), v1alpha1.PostgresPrimaryRole), &corev1.Service{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredRoleService(pg, pgspec.ReadService(pg.Name), v1alpha1.PostgresReplicaRole), &corev1.Service{}, children.WithoutCreateEvent()))
	for _, budget := range DesiredBudgets(pg) {
		out.record(r.Children.Ensure(ctx, pg, budget, &policyv1.PodDisruptionBudget{}, children.WithoutCreateEvent()))
	}
	for _, name := range unwantedBudgets(pg) {
		// A budget kept after a scale-down could only block drains: see
		// replicasMinAvailable.
		key := types.NamespacedName{Namespace: pg.Namespace, Name: name}
		if _, err := r.Children.Delete(ctx, pg, key, &policyv1.PodDisruptionBudget{}); err != nil {
			out.record(children.Result{Action: children.Failed, Err: err, Message: err.Error()})
		}
	}
	out.record(r.Children.Ensure(ctx, pg, DesiredLease(pg), &coordinationv1.Lease{}, children.WithoutCreateEvent()))
	if policy := DesiredNetworkPolicy(pg); policy != nil {
		out.record(r.Children.Ensure(ctx, pg, children.Typed(policy), &networkingv1.NetworkPolicy{}, children.WithoutCreateEvent()))
	} else if _, err := r.Children.Delete(ctx, pg, types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}, &networkingv1.NetworkPolicy{}); err != nil {
		out.record(children.Result{Action: children.Failed, Err: err, Message: err.Error()})
	}
}
