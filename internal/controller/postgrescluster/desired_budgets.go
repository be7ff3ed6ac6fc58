package postgrescluster

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"example.com/platform-operator/api/v1alpha1"
)

// The budgets say how many pods of a role must stay available, never how
// many may be missing: the disruption controller computes a maxUnavailable
// budget (or a percentage) from the scale subresource of the pods' owner,
// which a PostgresCluster does not have, and such a budget fails to sync
// and allows no eviction at all (issue 49). A whole minAvailable is counted
// over the pods the selector matches. The shape is CloudNativePG's
// (pkg/specs/poddisruptionbudget.go).

// DesiredBudgets are the cluster's PodDisruptionBudgets: CLUSTER-primary
// always, CLUSTER-replicas from three instances on (see
// replicasMinAvailable).
func DesiredBudgets(pg *v1alpha1.PostgresCluster) []*policyv1ac.PodDisruptionBudgetApplyConfiguration {
	budgets := []*policyv1ac.PodDisruptionBudgetApplyConfiguration{
		desiredBudget(pg, primaryBudget(pg), v1alpha1.PostgresPrimaryRole, 1),
	}
	if n := replicasMinAvailable(pg); n > 0 {
		budgets = append(budgets, desiredBudget(pg, replicaBudget(pg), v1alpha1.PostgresReplicaRole, n))
	}
	return budgets
}

// unwantedBudgets names the budgets of the cluster that DesiredBudgets
// leaves out, for the reconciler to delete: the replicas' one after a
// scale-down below three instances.
func unwantedBudgets(pg *v1alpha1.PostgresCluster) []string {
	if replicasMinAvailable(pg) > 0 {
		return nil
	}
	return []string{replicaBudget(pg)}
}

// replicasMinAvailable is how many of the instances − 1 replicas must stay
// available: all but one, so that a drain evicts them one at a time. With
// one or two instances it is 0 or less, and there is no replicas' budget
// at all: over one replica or none, a budget could only block a drain,
// never keep another replica serving.
func replicasMinAvailable(pg *v1alpha1.PostgresCluster) int32 {
	return pg.Spec.Instances - 2
}

// desiredBudget is a PodDisruptionBudget of the pods labelled with role,
// minAvailable of which must stay healthy. The primary's, minAvailable 1
// over its one pod, allows no eviction: a drain of its node waits until the
// operator switches over, which takes the label role=primary off the pod.
// A pod that is not healthy may always be evicted: keeping it would
// protect nothing that serves.
func desiredBudget(pg *v1alpha1.PostgresCluster, name, role string, minAvailable int32) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	selector := selectorLabels(pg)
	selector[v1alpha1.PostgresRoleLabel] = role
	return policyv1ac.PodDisruptionBudget(name, pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(minAvailable)).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))
}
