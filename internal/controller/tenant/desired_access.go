package tenant

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// DefaultOwnerRole is bound when spec.ownerRole is empty (the CRD defaults
// it too).
const DefaultOwnerRole = "admin"

// DefaultServiceAccountName is the ServiceAccount's name when
// spec.serviceAccount.name is empty.
const DefaultServiceAccountName = "tenant"

// ownerReference makes t the controller of an access object, so that the
// garbage collector removes access with the Tenant even while the operator
// is down. Namespaced children of a cluster-scoped owner are allowed.
func ownerReference(t *tenantv1.Tenant) *metav1ac.OwnerReferenceApplyConfiguration {
	return children.OwnerReference(t, tenantv1.GroupVersion.WithKind("Tenant"))
}

// OwnerRole is the ClusterRole the spec asks to bind.
func OwnerRole(t *tenantv1.Tenant) string {
	if t.Spec.OwnerRole == "" {
		return DefaultOwnerRole
	}
	return t.Spec.OwnerRole
}

// RoleBindingName is the name of the RoleBinding of role in each namespace.
func RoleBindingName(role string) string {
	return roleBindingPrefix + role
}

// ServiceAccountName is the name of t's ServiceAccount, or "" when the spec
// asks for none.
func ServiceAccountName(t *tenantv1.Tenant) string {
	if t.Spec.ServiceAccount == nil {
		return ""
	}
	if t.Spec.ServiceAccount.Name == "" {
		return DefaultServiceAccountName
	}
	return t.Spec.ServiceAccount.Name
}

// ServiceAccountNameAllowed tells whether the ServiceAccount the spec names
// may be made and bound. default never may: it is the ServiceAccount of
// every pod that names none, so binding it would give the owner role to
// all of them. The CRD refuses it; a Tenant stored before that rule still
// holds it.
func ServiceAccountNameAllowed(t *tenantv1.Tenant) bool {
	return ServiceAccountName(t) != forbiddenServiceAccountName
}

// forbiddenServiceAccountName is the ServiceAccount every namespace has and
// every pod that names none runs as.
const forbiddenServiceAccountName = "default"

// Subjects are the subjects bound to the owner role in every namespace of
// t: the owners, with the apiGroup RBAC needs filled in, then the tenant's
// ServiceAccount when serviceAccountHeld says it exists and is the
// Tenant's. A ServiceAccount is bound by name, so binding one the Tenant
// does not control would grant the owner role to whoever made it and to
// every pod that runs as it.
func Subjects(t *tenantv1.Tenant, serviceAccountHeld bool) []tenantv1.TenantSubject {
	subjects := make([]tenantv1.TenantSubject, 0, len(t.Spec.Owners)+1)
	for _, o := range t.Spec.Owners {
		switch o.Kind {
		case tenantv1.ServiceAccountSubject:
			o.APIGroup = ""
		default:
			o.APIGroup = rbacv1.GroupName
		}
		subjects = append(subjects, o)
	}
	if sa := ServiceAccountName(t); sa != "" && serviceAccountHeld && ServiceAccountNameAllowed(t) {
		subjects = append(subjects, tenantv1.TenantSubject{Kind: tenantv1.ServiceAccountSubject, Name: sa, Namespace: HomeNamespace(t)})
	}
	return subjects
}

// DesiredRoleBinding binds the owner role to the subjects of t in
// namespace, or is nil when there is nobody to bind. serviceAccountHeld is
// as for Subjects.
func DesiredRoleBinding(t *tenantv1.Tenant, namespace string, serviceAccountHeld bool) *rbacv1ac.RoleBindingApplyConfiguration {
	subjects := Subjects(t, serviceAccountHeld)
	if len(subjects) == 0 {
		return nil
	}
	role := OwnerRole(t)
	binding := rbacv1ac.RoleBinding(RoleBindingName(role), namespace).
		WithLabels(tenantLabels(t)).
		WithOwnerReferences(ownerReference(t)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(role))
	for _, s := range subjects {
		subject := rbacv1ac.Subject().WithKind(string(s.Kind)).WithName(s.Name)
		if s.APIGroup != "" {
			subject.WithAPIGroup(s.APIGroup)
		}
		if s.Namespace != "" {
			subject.WithNamespace(s.Namespace)
		}
		binding.WithSubjects(subject)
	}
	return binding
}

// DesiredServiceAccount is t's ServiceAccount in its home namespace, or nil
// when the spec asks for none or for one it may not have (default). Pods
// get no token of it unless they ask: it is meant for automation outside
// the cluster, through the credentials Secret.
func DesiredServiceAccount(t *tenantv1.Tenant) *corev1ac.ServiceAccountApplyConfiguration {
	name := ServiceAccountName(t)
	if name == "" || !ServiceAccountNameAllowed(t) {
		return nil
	}
	return corev1ac.ServiceAccount(name, HomeNamespace(t)).
		WithLabels(tenantLabels(t)).
		WithOwnerReferences(ownerReference(t)).
		WithAutomountServiceAccountToken(false)
}
