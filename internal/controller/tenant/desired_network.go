package tenant

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

// DesiredNetworkPolicy admits traffic into every pod of namespace only from
// pods in held, the namespaces t holds, or is nil with isolation None. The
// namespaces are selected by the label the API server sets to their name,
// which nobody can forge; a namespace of spec.namespaces that t does not
// hold (another's, in conflict) is not admitted. Outgoing traffic is not
// restricted.
func DesiredNetworkPolicy(t *tenantv1.Tenant, namespace string, held []string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if t.Spec.Isolation == tenantv1.NoIsolation {
		return nil
	}
	return networkingv1ac.NetworkPolicy(networkPolicyName, namespace).
		WithLabels(tenantLabels(t)).
		WithOwnerReferences(ownerReference(t)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().
				WithFrom(networkingv1ac.NetworkPolicyPeer().
					WithNamespaceSelector(metav1ac.LabelSelector().
						WithMatchExpressions(metav1ac.LabelSelectorRequirement().
							WithKey(namespaceNameLabel).
							WithOperator(metav1.LabelSelectorOpIn).
							WithValues(held...))))))
}
