package postgrescluster

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// DesiredAccount is the ServiceAccount of the cluster's instance managers.
func DesiredAccount(pg *v1alpha1.PostgresCluster) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(pgspec.InstanceAccount(pg.Name), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg))
}

// DesiredRole is what the instance managers of pg may do, each right
// limited to the objects of pg by name: read their cluster and its
// Secrets (the server certificate's, never the CA's key), write their reports on their pods, and hold the primary's
// Lease. The operator holds every right it grants here (RBAC refuses to let
// anyone grant more than they hold).
func DesiredRole(pg *v1alpha1.PostgresCluster) *rbacv1ac.RoleApplyConfiguration {
	pods := rolePods(pg)
	return rbacv1ac.Role(pgspec.InstanceAccount(pg.Name), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups(v1alpha1.GroupVersion.Group).WithResources("postgresclusters").
				WithResourceNames(pg.Name).WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").
				WithResourceNames(pods...).WithVerbs("get", "list", "watch", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").
				WithResourceNames(pgspec.AppSecret(pg), pgspec.SuperuserSecret(pg.Name), pgspec.ReplicationSecret(pg.Name), pgspec.BackupSecret(pg.Name),
					pgspec.ServerSecret(pg.Name)).WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
				WithResourceNames(pgspec.LeaseName(pg.Name)).WithVerbs("get", "list", "watch", "update"),
		)
}

// rolePods are the pods whose instance managers write their reports: the
// instances CLUSTER-1 to CLUSTER-spec.instances, and those beyond it that
// the last status still counts (a scale-down keeps the primary's pod until
// it has handed over, and the other leaving pods until they are gone).
// Never a name beyond, which another application's pod may hold in the
// namespace (a StatefulSet named like the cluster): whoever runs as
// CLUSTER-instance, with the image the PostgresCluster names, could patch
// it, its image among its fields. Names within spec.instances that such a
// pod holds are the PostgresCluster's own: it reports the conflict.
func rolePods(pg *v1alpha1.PostgresCluster) []string {
	highest := max(int(pg.Spec.Instances), 1)
	for _, name := range []string{pg.Status.CurrentPrimary, pg.Status.TargetPrimary} {
		highest = max(highest, pgspec.Ordinal(pg.Name, name))
	}
	for _, i := range pg.Status.Instances {
		highest = max(highest, pgspec.Ordinal(pg.Name, i.Name))
	}
	highest = min(highest, pgspec.MaxInstances)
	pods := make([]string, 0, highest)
	for n := 1; n <= highest; n++ {
		pods = append(pods, pgspec.InstanceName(pg.Name, n))
	}
	return pods
}

// DesiredRoleBinding binds DesiredRole to DesiredAccount.
func DesiredRoleBinding(pg *v1alpha1.PostgresCluster) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(pgspec.InstanceAccount(pg.Name), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(pgspec.InstanceAccount(pg.Name))).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(pgspec.InstanceAccount(pg.Name)).WithNamespace(pg.Namespace))
}
