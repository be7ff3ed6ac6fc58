package postgrescluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// portName names the PostgreSQL port of the pods and Services.
const portName = "postgres"

func ownerReference(pg *v1alpha1.PostgresCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return children.OwnerReference(pg, v1alpha1.GroupVersion.WithKind(kind))
}

// desiredHeadlessService gives each instance its stable DNS name,
// INSTANCE.CLUSTER.NAMESPACE.svc, ready or not: replicas reach the primary
// by it, and a starting instance must be reachable before it is ready.
func desiredHeadlessService(pg *v1alpha1.PostgresCluster) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(pgspec.HeadlessService(pg.Name), pg.Namespace).
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
		WithPort(pgspec.Port).
		WithTargetPort(intstr.FromString(portName))
}

// DesiredLease is the primary's Lease, without a holder: the instance
// managers take and renew it, and the operator sets only what identifies
// it.
func DesiredLease(pg *v1alpha1.PostgresCluster) *coordinationv1ac.LeaseApplyConfiguration {
	return coordinationv1ac.Lease(pgspec.LeaseName(pg.Name), pg.Namespace).
		WithLabels(clusterLabels(pg)).
		WithOwnerReferences(ownerReference(pg))
}
