package tenant

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// tenantSelector selects the objects labelled as t's.
func tenantSelector(t *tenantv1.Tenant) labels.Selector {
	return labels.SelectorFromSet(labels.Set{tenantv1.TenantLabel: t.Name})
}

// ensureAccess makes the access objects of t in the namespace n, which t
// holds: the RoleBinding of the owner role (unless suspended or the role is
// not allowed; the ServiceAccount among its subjects only when
// serviceAccountHeld), the quota, the LimitRange and the NetworkPolicy, each
// only when the spec asks for it. It returns the namespace's ResourceQuota,
// when there is one, for the tenant-wide totals.
func (r *Reconciler) ensureAccess(ctx context.Context, t *tenantv1.Tenant, n *namespaceObservation, held []string, roleAllowed, serviceAccountHeld bool, out *outcome) *corev1.ResourceQuota {
	note := func(c *cause) {
		if n.access == nil {
			n.access = c
		}
	}

	var keepBinding string
	if !t.Spec.Suspend && roleAllowed {
		if desired := DesiredRoleBinding(t, n.name, serviceAccountHeld); desired != nil {
			binding := &rbacv1.RoleBinding{}
			res := r.Children.Ensure(ctx, t, desired, binding, children.CreatedInto(&out.created))
			note(out.record(res, tenantv1.AccessConflictReason))
			// A binding whose update the API server refused binds whom the
			// spec no longer names (an owner removed): access fails closed,
			// and it is pruned below.
			if res.Exists && res.Action != children.Invalid {
				keepBinding = binding.Name
				n.role = binding.RoleRef.Name
				n.subjects = subjectsOf(binding.Subjects)
			}
		}
	}
	// Bindings of a former role, or all of them while suspended.
	if _, err := r.Children.Prune(ctx, t, &rbacv1.RoleBindingList{}, n.name, tenantSelector(t),
		func(o client.Object) bool { return o.GetName() == keepBinding }); err != nil {
		out.Add(err, false)
		note(problem(tenantv1.TenantApplyFailedReason, err.Error()))
	}

	var quota *corev1.ResourceQuota
	if desired := DesiredResourceQuota(t, n.name); desired != nil {
		live := &corev1.ResourceQuota{}
		res := r.Children.Ensure(ctx, t, desired, live, children.CreatedInto(&out.created))
		note(out.record(res, tenantv1.AccessConflictReason))
		if res.Exists {
			quota = live
		}
	} else {
		note(r.remove(ctx, t, n.name, quotaName, &corev1.ResourceQuota{}, out))
	}

	if desired := DesiredLimitRange(t, n.name); desired != nil {
		note(out.record(r.Children.Ensure(ctx, t, desired, &corev1.LimitRange{}, children.CreatedInto(&out.created)), tenantv1.AccessConflictReason))
	} else {
		note(r.remove(ctx, t, n.name, limitRangeName, &corev1.LimitRange{}, out))
	}

	if desired := DesiredNetworkPolicy(t, n.name, held); desired != nil {
		note(out.record(r.Children.Ensure(ctx, t, desired, &networkingv1.NetworkPolicy{}, children.CreatedInto(&out.created)), tenantv1.AccessConflictReason))
	} else {
		note(r.remove(ctx, t, n.name, networkPolicyName, &networkingv1.NetworkPolicy{}, out))
	}
	return quota
}

// remove deletes the child of t named name in namespace that the spec no
// longer asks for.
func (r *Reconciler) remove(ctx context.Context, t *tenantv1.Tenant, namespace, name string, obj client.Object, out *outcome) *cause {
	if _, err := r.Children.Delete(ctx, t, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		out.Add(err, false)
		return problem(tenantv1.TenantApplyFailedReason, err.Error())
	}
	return nil
}

// ensureServiceAccount makes t's ServiceAccount in its home namespace, and
// removes one of a former name. uid is the UID of the ServiceAccount the
// spec asks for, empty while it does not exist or is not controlled by t:
// only a ServiceAccount with a UID is bound and given credentials.
func (r *Reconciler) ensureServiceAccount(ctx context.Context, t *tenantv1.Tenant, out *outcome) (uid types.UID, problem *cause) {
	want := ServiceAccountName(t)
	switch desired := DesiredServiceAccount(t); {
	case want != "" && !ServiceAccountNameAllowed(t):
		problem = serviceAccountNotAllowed(t)
	case desired != nil:
		sa := &corev1.ServiceAccount{}
		res := r.Children.Ensure(ctx, t, desired, sa, children.CreatedInto(&out.created))
		if res.Action == children.Conflict {
			// Someone else's: never adopted, so that a Tenant cannot be
			// pointed at a ServiceAccount that pods already run as.
			res.Message = serviceAccountConflictMessage(t, res.Message)
		}
		problem = out.record(res, tenantv1.ServiceAccountConflictReason)
		if res.Exists {
			uid = sa.UID
		}
	}
	if _, err := r.Children.Prune(ctx, t, &corev1.ServiceAccountList{}, HomeNamespace(t), tenantSelector(t),
		func(o client.Object) bool { return o.GetName() == want }); err != nil {
		out.Add(err, false)
		if problem == nil {
			problem = problemOf(err)
		}
	}
	return uid, problem
}

// revokeAccess deletes every access object of t in namespace: RoleBindings,
// ServiceAccounts, Secrets, quota, LimitRange and NetworkPolicy. Only
// objects labelled as t's and controlled by it are deleted.
func (r *Reconciler) revokeAccess(ctx context.Context, t *tenantv1.Tenant, namespace string) error {
	none := func(client.Object) bool { return false }
	var errs []error
	for _, list := range []client.ObjectList{&rbacv1.RoleBindingList{}, &corev1.SecretList{}, &corev1.ServiceAccountList{},
		&corev1.ResourceQuotaList{}, &corev1.LimitRangeList{}, &networkingv1.NetworkPolicyList{}} {
		if _, err := r.Children.Prune(ctx, t, list, namespace, tenantSelector(t), none); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("revoke the access of Tenant %s in namespace %s: %w", t.Name, namespace, err)
	}
	return nil
}

// serviceAccountNotAllowed is the cause reported for a Tenant stored with
// spec.serviceAccount.name default, from before the CRD refused it.
func serviceAccountNotAllowed(t *tenantv1.Tenant) *cause {
	return problem(tenantv1.ServiceAccountNotAllowedReason, fmt.Sprintf(
		"spec.serviceAccount.name %q is not allowed: every pod in %s that names no ServiceAccount runs as it, so binding it would give ClusterRole %s to all of them; it is neither made, bound nor given credentials. Choose another name",
		ServiceAccountName(t), HomeNamespace(t), OwnerRole(t)))
}

// serviceAccountConflictMessage says why the ServiceAccount of t is not
// bound: one of its name exists and is not the Tenant's (detail says whose).
func serviceAccountConflictMessage(t *tenantv1.Tenant, detail string) string {
	return fmt.Sprintf("ServiceAccount %s/%s (spec.serviceAccount.name) is not bound to ClusterRole %s and gets no credentials: %s",
		HomeNamespace(t), ServiceAccountName(t), OwnerRole(t), detail)
}

func problemOf(err error) *cause {
	return problem(tenantv1.TenantApplyFailedReason, err.Error())
}

// subjectsOf reads the subjects of a RoleBinding back into the API's form.
func subjectsOf(subjects []rbacv1.Subject) []tenantv1.TenantSubject {
	out := make([]tenantv1.TenantSubject, 0, len(subjects))
	for _, s := range subjects {
		out = append(out, tenantv1.TenantSubject{Kind: tenantv1.SubjectKind(s.Kind), APIGroup: s.APIGroup, Name: s.Name, Namespace: s.Namespace})
	}
	return out
}
