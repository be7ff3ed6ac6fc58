package tenant

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

// DesiredResourceQuota is the ResourceQuota of t in namespace, or nil when
// the spec sets no quota.
func DesiredResourceQuota(t *tenantv1.Tenant, namespace string) *corev1ac.ResourceQuotaApplyConfiguration {
	if t.Spec.Quota == nil || len(t.Spec.Quota.Hard) == 0 {
		return nil
	}
	return corev1ac.ResourceQuota(quotaName, namespace).
		WithLabels(tenantLabels(t)).
		WithOwnerReferences(ownerReference(t)).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(t.Spec.Quota.Hard.DeepCopy()))
}

// DesiredLimitRange gives the containers in namespace that set no requests
// or limits those of spec.quota.containerDefaults, or is nil when it is
// unset.
func DesiredLimitRange(t *tenantv1.Tenant, namespace string) *corev1ac.LimitRangeApplyConfiguration {
	if t.Spec.Quota == nil || t.Spec.Quota.TenantContainerDefaults == nil {
		return nil
	}
	defaults := t.Spec.Quota.TenantContainerDefaults
	item := corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer)
	if len(defaults.DefaultRequest) > 0 {
		item.WithDefaultRequest(defaults.DefaultRequest.DeepCopy())
	}
	if len(defaults.Default) > 0 {
		item.WithDefault(defaults.Default.DeepCopy())
	}
	return corev1ac.LimitRange(limitRangeName, namespace).
		WithLabels(tenantLabels(t)).
		WithOwnerReferences(ownerReference(t)).
		WithSpec(corev1ac.LimitRangeSpec().WithLimits(item))
}
