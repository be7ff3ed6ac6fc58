package postgrescluster

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// PostgresPort is where every instance's PostgreSQL listens, and the port of
// the Services.
const PostgresPort int32 = 5432

// portName names the PostgreSQL port of the pods and Services.
const portName = "postgres"

func ownerReference(pg *v1alpha1.PostgresCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return children.OwnerReference(pg, v1alpha1.GroupVersion.WithKind(kind))
}

// desiredHeadlessService gives each instance its stable DNS name,
// INSTANCE.CLUSTER.NAMESPACE.svc, ready or not: replicas reach the primary
// by it, and a starting instance must be reachable before it is ready.
func desiredHeadlessService(pg *v1alpha1.PostgresCluster) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(headlessService(pg), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selectorLabels(pg)).
			WithPorts(servicePort()))
}

// desiredRoleService is CLUSTER-rw (role primary) or CLUSTER-ro (replica):
// the operator puts the role label only on instances that can serve it.
func desiredRoleService(pg *v1alpha1.PostgresCluster, name, role string) *corev1ac.ServiceApplyConfiguration {
	selector := selectorLabels(pg)
	selector[v1alpha1.PostgresRoleLabel] = role
	return corev1ac.Service(name, pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(servicePort()))
}

func servicePort() *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().
		WithName(portName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(PostgresPort).
		WithTargetPort(intstr.FromString(portName))
}

// DesiredBudgets are the cluster's PodDisruptionBudgets, CLUSTER-primary and
// CLUSTER-replicas: at most none of the primary's pods and one replica's
// unavailable at once.
func DesiredBudgets(pg *v1alpha1.PostgresCluster) []*policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return []*policyv1ac.PodDisruptionBudgetApplyConfiguration{
		desiredBudget(pg, primaryBudget(pg), v1alpha1.PostgresPrimaryRole, 0),
		desiredBudget(pg, replicaBudget(pg), v1alpha1.PostgresReplicaRole, 1),
	}
}

// desiredBudget is a PodDisruptionBudget of the pods of one role. The
// primary's allows no eviction: a drain of its node waits while the
// operator switches over, after which the pod is a replica's and goes.
// The replicas' allow one at a time.
func desiredBudget(pg *v1alpha1.PostgresCluster, name, role string, maxUnavailable int32) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	selector := selectorLabels(pg)
	selector[v1alpha1.PostgresRoleLabel] = role
	return policyv1ac.PodDisruptionBudget(name, pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(maxUnavailable)).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))
}

// DesiredLease is the primary's Lease, without a holder: the instance
// managers take and renew it, and the operator sets only what identifies
// it.
func DesiredLease(pg *v1alpha1.PostgresCluster) *coordinationv1ac.LeaseApplyConfiguration {
	return coordinationv1ac.Lease(leaseName(pg), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg))
}
