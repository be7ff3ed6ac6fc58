package tenant

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

// DesiredNamespace is the desired namespace name of t: labelled as the
// tenant's, with the Pod Security level of the spec enforced (and warned and
// audited at the same level), and without an owner reference, so that no
// cascade can delete it with the Tenant.
func DesiredNamespace(t *tenantv1.Tenant, name string) *corev1ac.NamespaceApplyConfiguration {
	level := string(podSecurity(t))
	labels := tenantLabels(t)
	labels[podSecurityEnforceLabel] = level
	labels[podSecurityEnforceVersionLabel] = "latest"
	labels[podSecurityWarnLabel] = level
	labels[podSecurityAuditLabel] = level
	return corev1ac.Namespace(name).WithLabels(labels)
}

func podSecurity(t *tenantv1.Tenant) tenantv1.PodSecurityLevel {
	if t.Spec.PodSecurity == "" {
		return tenantv1.RestrictedPodSecurity
	}
	return t.Spec.PodSecurity
}

// HomeNamespace is the first namespace of t, where its ServiceAccount and
// credentials live.
func HomeNamespace(t *tenantv1.Tenant) string {
	return t.Spec.Namespaces[0]
}
