package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// deletionConfirmed tells whether deleting t may delete its namespaces:
// deletionPolicy Delete and the confirmation annotation set to t's own name,
// so that neither a default nor an annotation copied from another Tenant
// deletes data.
func deletionConfirmed(t *tenantv1.Tenant) bool {
	return t.Spec.DeletionPolicy == tenantv1.DeleteNamespaces && t.Annotations[tenantv1.TenantConfirmDeleteAnnotation] == t.Name
}

// Finalize offboards t, which is being deleted: it revokes the tenant's
// access in every namespace it holds and releases them, or, with a confirmed
// Delete policy, deletes them. Then the finalizer may go; with Delete, only
// once the namespaces have terminated (reported in status meanwhile), or
// DeletionGracePeriod has passed, so that a namespace stuck terminating
// does not keep the Tenant forever.
func (r *Reconciler) Finalize(ctx context.Context, t *tenantv1.Tenant) (kit.Outcome[tenantv1.TenantStatus], bool) {
	held, err := r.heldNamespaces(ctx, t)
	if err != nil {
		return kit.Outcome[tenantv1.TenantStatus]{Err: err}, false
	}
	confirmed := deletionConfirmed(t)
	if t.Spec.DeletionPolicy == tenantv1.DeleteNamespaces && !confirmed {
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "DeletionNotConfirmed", "Delete",
			"deletionPolicy is Delete but the annotation %s=%s is missing: the namespaces are released and kept, not deleted",
			tenantv1.TenantConfirmDeleteAnnotation, t.Name)
	}

	var errs []error
	var terminating []namespaceObservation
	for i := range held {
		ns := &held[i]
		switch {
		case !confirmed:
			errs = append(errs, r.release(ctx, t, ns, "Tenant "+t.Name+" was deleted"))
		case !slices.Contains(t.Spec.Namespaces, ns.Name) && ns.DeletionTimestamp == nil:
			// Removed from the spec but not yet released (the operator was
			// away, or the release failed): the user chose to keep it, so
			// the confirmation to delete the Tenant's namespaces is not
			// one to delete it.
			errs = append(errs, r.release(ctx, t, ns, "it was removed from Tenant "+t.Name+"'s namespaces before the Tenant was deleted"))
		case ns.DeletionTimestamp == nil:
			errs = append(errs, r.deleteNamespace(ctx, t, ns))
			terminating = append(terminating, terminatingNamespace(ns))
		default:
			terminating = append(terminating, terminatingNamespace(ns))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return kit.Outcome[tenantv1.TenantStatus]{Err: err}, false
	}

	now := r.Clock.Now()
	deadline := t.DeletionTimestamp.Add(r.DeletionGracePeriod)
	if len(terminating) > 0 && now.Before(deadline) {
		status := computeOffboardingStatus(t, terminating, deadline, now)
		return kit.Outcome[tenantv1.TenantStatus]{Status: &status, After: min(deletionPollInterval, deadline.Sub(now))}, false
	}
	if len(terminating) > 0 {
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, "NamespacesStillTerminating", "Delete",
			"Tenant %s goes away while namespaces are still terminating after %s: %s",
			t.Name, r.DeletionGracePeriod, describeTerminating(terminating))
	}
	return kit.Outcome[tenantv1.TenantStatus]{}, true
}

func terminatingNamespace(ns *corev1.Namespace) namespaceObservation {
	return namespaceObservation{
		name:       ns.Name,
		phase:      tenantv1.NamespaceTerminating,
		message:    fmt.Sprintf("Namespace %s is terminating", ns.Name),
		conditions: ns.Status.Conditions,
	}
}

// computeOffboardingStatus is the status of t while it waits, until
// deadline, for its namespaces to terminate: they are listed with their own
// conditions, and Ready says what the deletion waits for.
func computeOffboardingStatus(t *tenantv1.Tenant, terminating []namespaceObservation, deadline, now time.Time) tenantv1.TenantStatus {
	status := tenantv1.TenantStatus{ObservedGeneration: t.Generation, Ready: fmt.Sprintf("0/%d", len(t.Spec.Namespaces))}
	for _, n := range terminating {
		status.Namespaces = append(status.Namespaces, namespaceStatus(n))
	}
	message := kit.TruncateMessage(fmt.Sprintf("Deleting: waiting until %s at most for namespaces to terminate: %s",
		deadline.UTC().Format(time.RFC3339), describeTerminating(terminating)))
	ready := metav1.Condition{Type: tenantv1.TenantReadyCondition, Status: metav1.ConditionFalse, Reason: tenantv1.TenantDeletingReason, Message: message}
	namespaces := metav1.Condition{Type: tenantv1.TenantNamespacesReadyCondition, Status: metav1.ConditionFalse, Reason: tenantv1.NamespaceTerminatingReason, Message: message}
	conditions := []metav1.Condition{ready, namespaces}
	for _, c := range t.Status.Conditions {
		if c.Type != ready.Type && c.Type != namespaces.Type {
			conditions = append(conditions, c)
		}
	}
	status.Conditions = kit.MergeConditions(t.Status.Conditions, t.Generation, metav1.NewTime(now), conditions...)
	return status
}

// describeTerminating names the namespaces and what each still waits for,
// from its own conditions.
func describeTerminating(ns []namespaceObservation) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		var waits []string
		for _, c := range n.conditions {
			if c.Status == corev1.ConditionTrue && c.Message != "" {
				waits = append(waits, c.Message)
			}
		}
		if len(waits) == 0 {
			parts = append(parts, n.name)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n.name, strings.Join(waits, "; ")))
	}
	return strings.Join(parts, ", ")
}
