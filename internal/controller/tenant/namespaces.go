package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/platform"
)

// ensureNamespaces makes every namespace of spec.namespaces exist with the
// Tenant's labels, or reports why it cannot: a namespace that exists and is
// not the Tenant's is never touched, unless a person labelled it for
// adoption.
func (r *Reconciler) ensureNamespaces(ctx context.Context, t *tenantv1.Tenant, out *outcome) []namespaceObservation {
	observed := make([]namespaceObservation, 0, len(t.Spec.Namespaces))
	for _, name := range t.Spec.Namespaces {
		ns := &corev1.Namespace{}
		res := r.Children.Ensure(ctx, t, DesiredNamespace(t, name), ns,
			children.OwnedBy(holdsNamespace(t)), children.AdoptIf(mayAdoptNamespace(t)), children.CreatedInto(&out.created))
		n := namespaceObservation{name: name}
		switch res.Action {
		case children.Conflict:
			out.conflict = true
			n.phase = tenantv1.NamespaceConflict
			n.message = namespaceConflictMessage(t, ns)
		case children.Invalid, children.Failed:
			out.record(res, "")
			n.phase = tenantv1.NamespaceFailed
			n.message = res.Message
			n.failedButHeld = res.Exists && ns.DeletionTimestamp == nil && holdsNamespace(t)(ns)
		default:
			n.phase = tenantv1.NamespaceActive
			if ns.DeletionTimestamp != nil {
				n.phase = tenantv1.NamespaceTerminating
				n.message = fmt.Sprintf("Namespace %s is terminating", name)
				n.conditions = ns.Status.Conditions
			}
		}
		observed = append(observed, n)
	}
	return observed
}

func namespaceConflictMessage(t *tenantv1.Tenant, ns *corev1.Namespace) string {
	if other := heldByOther(t, ns); other != "" {
		return fmt.Sprintf("Namespace %s is held by Tenant %s; two Tenants cannot share a namespace. It is left to Tenant %s", ns.Name, other, other)
	}
	return fmt.Sprintf("Namespace %s already exists and is not the Tenant's; the operator leaves it untouched. "+
		"To hand it over, label it %s=%s", ns.Name, tenantv1.TenantAdoptLabel, t.Name)
}

// heldNamespaces lists the namespaces labelled as t's. The cache holds only
// namespaces with the operator's label, and all of t's carry it.
func (r *Reconciler) heldNamespaces(ctx context.Context, t *tenantv1.Tenant) ([]corev1.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{tenantv1.TenantLabel: t.Name}); err != nil {
		return nil, fmt.Errorf("list the namespaces of Tenant %s: %w", t.Name, err)
	}
	held := list.Items[:0]
	for _, ns := range list.Items {
		if holdsNamespace(t)(&ns) {
			held = append(held, ns)
		}
	}
	return held, nil
}

// releaseRemovedNamespaces releases the namespaces t holds that are no
// longer in spec.namespaces: their access objects are deleted and the
// Tenant's labels removed. They are never deleted: their data stays.
func (r *Reconciler) releaseRemovedNamespaces(ctx context.Context, t *tenantv1.Tenant) error {
	held, err := r.heldNamespaces(ctx, t)
	if err != nil {
		return err
	}
	var errs []error
	for i := range held {
		ns := &held[i]
		if slices.Contains(t.Spec.Namespaces, ns.Name) {
			continue
		}
		errs = append(errs, r.release(ctx, t, ns, "it was removed from spec.namespaces"))
	}
	return errors.Join(errs...)
}

// release removes every access object of t from ns, then the labels that
// make ns t's. The Pod Security labels stay: removing them would loosen the
// rules for workloads that keep running there. The patch is guarded by the
// namespace's resourceVersion, so a namespace changed meanwhile (or deleted
// and recreated under the same name) is not the one relabelled.
func (r *Reconciler) release(ctx context.Context, t *tenantv1.Tenant, ns *corev1.Namespace, why string) error {
	if err := r.revokeAccess(ctx, t, ns.Name); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(ns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	released := ns.DeepCopy()
	delete(released.Labels, tenantv1.TenantLabel)
	delete(released.Labels, platform.ManagedByLabel)
	delete(released.Annotations, children.ConfigHashAnnotation)
	if err := r.Client.Patch(ctx, released, patch, client.FieldOwner(platform.Name)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("release namespace %s: %w", ns.Name, err)
	}
	children.CountWrite(tenantKind, "Namespace", "release")
	r.Recorder.Eventf(t, ns, corev1.EventTypeNormal, "NamespaceReleased", "Release",
		"Namespace %s released because %s: access removed, labels %s and %s dropped, namespace and data kept",
		ns.Name, why, tenantv1.TenantLabel, platform.ManagedByLabel)
	return nil
}

// deleteNamespace deletes ns, guarded by its UID, for a confirmed Delete
// policy.
func (r *Reconciler) deleteNamespace(ctx context.Context, t *tenantv1.Tenant, ns *corev1.Namespace) error {
	uid := ns.UID
	if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
	}
	children.CountWrite(tenantKind, "Namespace", "delete")
	r.Recorder.Eventf(t, ns, corev1.EventTypeNormal, "NamespaceDeleted", "Delete",
		"Namespace %s deleted: deletionPolicy is Delete and the deletion was confirmed by %s", ns.Name, tenantv1.TenantConfirmDeleteAnnotation)
	return nil
}
