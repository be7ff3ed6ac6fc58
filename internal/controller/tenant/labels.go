package tenant

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/platform"
)

// Names of the objects the Tenant puts into each of its namespaces. They are
// fixed: a namespace belongs to one Tenant at most, so they cannot clash
// with another Tenant's.
const (
	// roleBindingPrefix starts the name of the RoleBinding of ownerRole,
	// which ends with the role's name: a RoleBinding's roleRef cannot
	// change, so a new role means a new RoleBinding (and the old one is
	// pruned).
	roleBindingPrefix = "tenant-"
	quotaName         = "tenant-quota"
	limitRangeName    = "tenant-defaults"
	networkPolicyName = "tenant-isolation"
)

// Pod Security admission labels of a namespace.
const (
	podSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	podSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	podSecurityWarnLabel           = "pod-security.kubernetes.io/warn"
	podSecurityAuditLabel          = "pod-security.kubernetes.io/audit"
)

// namespaceNameLabel is set by the API server on every namespace to its
// name. Nobody can change it, so a NetworkPolicy that selects namespaces by
// it cannot be fooled by a label someone adds.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// tenantLabels are the labels of every object of t: the operator's and the
// tenant's. A namespace is the tenant's by these labels alone.
func tenantLabels(t *tenantv1.Tenant) map[string]string {
	labels := children.ManagedLabels()
	labels[tenantv1.TenantLabel] = t.Name
	return labels
}

// holdsNamespace tells whether t holds the namespace: it carries the
// operator's label and t's name in the tenant label. Namespaces have no
// owner reference, so this is the whole test; it goes by name, so a Tenant
// recreated under the same name finds its namespaces again.
func holdsNamespace(t *tenantv1.Tenant) func(client.Object) bool {
	return func(ns client.Object) bool {
		labels := ns.GetLabels()
		managed := labels[platform.ManagedByLabel] == platform.Name || labels[platform.ManagedByLabel] == platform.LegacyName
		return managed && labels[tenantv1.TenantLabel] == t.Name
	}
}

// mayAdoptNamespace tells whether an existing namespace that t does not hold
// may be taken over: a person labelled it for t, and no other Tenant holds
// it.
func mayAdoptNamespace(t *tenantv1.Tenant) func(client.Object) bool {
	return func(ns client.Object) bool {
		labels := ns.GetLabels()
		holder := labels[tenantv1.TenantLabel]
		return labels[tenantv1.TenantAdoptLabel] == t.Name && (holder == "" || holder == t.Name)
	}
}

// heldByOther names the other Tenant that holds ns, if any.
func heldByOther(t *tenantv1.Tenant, ns client.Object) string {
	labels := ns.GetLabels()
	if holder := labels[tenantv1.TenantLabel]; holder != "" && holder != t.Name {
		return holder
	}
	return ""
}

// tenantKind names the Tenant in metrics and messages.
const tenantKind = "Tenant"
