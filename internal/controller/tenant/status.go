package tenant

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// computeStatus derives the status of t from what was observed at now. It
// reads the previous status only to keep the lastTransitionTime of
// conditions whose status did not change.
func computeStatus(t *tenantv1.Tenant, obs observation, now time.Time) tenantv1.TenantStatus {
	status := tenantv1.TenantStatus{ObservedGeneration: t.Generation}
	active := 0
	for _, n := range obs.namespaces {
		ns := namespaceStatus(n)
		if ns.Phase == tenantv1.NamespaceActive {
			active++
		}
		status.Namespaces = append(status.Namespaces, ns)
	}
	status.Ready = fmt.Sprintf("%d/%d", active, len(t.Spec.Namespaces))
	status.Quota = quotaTotals(obs.quotas)
	status.Credentials = credentialsStatus(obs.credentials)

	namespaces := namespacesCondition(obs)
	access := accessCondition(t, obs)
	credentials := credentialsCondition(t, obs, now)
	ready, degraded := summary(t, obs, namespaces, access, credentials)
	reconciling, stalled := kit.KStatusConditions(ready, degraded, kstatusReasons)
	status.Conditions = kit.MergeConditions(t.Status.Conditions, t.Generation, metav1.NewTime(now),
		ready, namespaces.condition, access.condition, credentials.condition, degraded, reconciling, stalled)
	return status
}

// kstatusReasons: an object of someone else's in the way, a role or a
// ServiceAccount the creator may not hand out, and a spec refused wait for a
// person; a write that failed is retried.
var kstatusReasons = kit.KStatusReasons{Stalled: []string{
	tenantv1.NamespaceConflictReason, tenantv1.OwnerRoleNotAllowedReason, tenantv1.AccessConflictReason,
	tenantv1.ServiceAccountNotAllowedReason, tenantv1.ServiceAccountConflictReason, tenantv1.CredentialsConflictReason,
	tenantv1.TenantInvalidSpecReason,
}}

// judged is a condition and, when it is False for a cause that needs a
// person, that cause.
type judged struct {
	condition metav1.Condition
	cause     *cause
}

func judge(conditionType string, ok bool, why cause) judged {
	c := metav1.Condition{Type: conditionType, Status: metav1.ConditionTrue, Reason: why.reason, Message: why.message}
	if !ok {
		c.Status = metav1.ConditionFalse
		return judged{condition: c, cause: &why}
	}
	return judged{condition: c}
}

func namespaceStatus(n namespaceObservation) tenantv1.TenantNamespaceStatus {
	ns := tenantv1.TenantNamespaceStatus{Name: n.name, Phase: n.phase, Message: kit.TruncateMessage(n.message), Role: n.role, Subjects: n.subjects}
	if n.phase == tenantv1.NamespaceActive && n.access != nil {
		ns.Phase = tenantv1.NamespaceFailed
		ns.Message = n.access.message
	}
	for i, c := range n.conditions {
		if i == 16 {
			break
		}
		ns.Conditions = append(ns.Conditions, tenantv1.TenantNamespaceCondition{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: kit.TruncateMessage(c.Message)})
	}
	return ns
}

// namespacesCondition: True when every namespace is held and not
// terminating; else the first conflict, failure or termination, in that
// order of urgency.
func namespacesCondition(obs observation) judged {
	var conflicts, failed, terminating []namespaceObservation
	for _, n := range obs.namespaces {
		switch n.phase {
		case tenantv1.NamespaceConflict:
			conflicts = append(conflicts, n)
		case tenantv1.NamespaceFailed:
			failed = append(failed, n)
		case tenantv1.NamespaceTerminating:
			terminating = append(terminating, n)
		}
	}
	switch {
	case len(conflicts) > 0:
		return judge(tenantv1.TenantNamespacesReadyCondition, false, *problem(tenantv1.NamespaceConflictReason, joinMessages(conflicts)))
	case len(failed) > 0:
		return judge(tenantv1.TenantNamespacesReadyCondition, false, *problem(failedReason(failed[0].message), joinMessages(failed)))
	case obs.notReleased != nil:
		return judge(tenantv1.TenantNamespacesReadyCondition, false, *problem(obs.notReleased.reason,
			kit.TruncateMessage("A namespace removed from spec.namespaces still holds the Tenant's labels and access: "+obs.notReleased.message)))
	case len(terminating) > 0:
		return judge(tenantv1.TenantNamespacesReadyCondition, false, cause{reason: tenantv1.NamespaceTerminatingReason,
			message: kit.TruncateMessage(joinMessages(terminating))})
	}
	return judge(tenantv1.TenantNamespacesReadyCondition, true, cause{reason: tenantv1.NamespacesActiveReason,
		message: fmt.Sprintf("%d namespaces held by the Tenant: %s", len(obs.namespaces), names(obs.namespaces))})
}

// accessCondition: True when the owner role is bound (or there is nobody to
// bind) and quota and isolation are in place in every namespace held.
func accessCondition(t *tenantv1.Tenant, obs observation) judged {
	role := OwnerRole(t)
	switch {
	case t.Spec.Suspend:
		return judge(tenantv1.TenantAccessReadyCondition, false, cause{reason: tenantv1.TenantSuspendedReason,
			message: "spec.suspend is true: the RoleBindings were removed; namespaces, quota and data are kept"})
	case obs.roleNotAllowed:
		return judge(tenantv1.TenantAccessReadyCondition, false, *problem(tenantv1.OwnerRoleNotAllowedReason, fmt.Sprintf(
			"spec.ownerRole %q is not a role the operator may bind; nothing is bound. Ask the platform team, or use one of the allowed roles", role)))
	case obs.serviceAccount != nil:
		return judge(tenantv1.TenantAccessReadyCondition, false, *obs.serviceAccount)
	}
	for _, n := range obs.namespaces {
		if n.held() && n.access != nil {
			return judge(tenantv1.TenantAccessReadyCondition, false, *n.access)
		}
	}
	var waiting []string
	for _, n := range obs.namespaces {
		if !n.held() {
			waiting = append(waiting, n.name)
		}
	}
	if len(waiting) > 0 {
		return judge(tenantv1.TenantAccessReadyCondition, false, cause{reason: tenantv1.WaitingForNamespacesReason,
			message: "No access is granted in namespaces the Tenant does not hold: " + strings.Join(waiting, ", ")})
	}
	subjects := Subjects(t, obs.serviceAccountHeld)
	if len(subjects) == 0 {
		return judge(tenantv1.TenantAccessReadyCondition, true, cause{reason: tenantv1.AccessGrantedReason,
			message: "No owners and no ServiceAccount: nobody is bound"})
	}
	return judge(tenantv1.TenantAccessReadyCondition, true, cause{reason: tenantv1.AccessGrantedReason,
		message: kit.TruncateMessage(fmt.Sprintf("ClusterRole %s bound to %s in %d namespaces", role, describeSubjects(subjects), len(obs.namespaces)))})
}

// credentialsCondition: True when the Secret holds a token valid at now, or
// when none is asked for.
func credentialsCondition(t *tenantv1.Tenant, obs observation, now time.Time) judged {
	c := obs.credentials
	switch {
	case !c.requested:
		return judge(tenantv1.TenantCredentialsReadyCondition, true, cause{reason: tenantv1.CredentialsNotRequestedReason,
			message: "spec.credentials is not set"})
	case t.Spec.Suspend:
		return judge(tenantv1.TenantCredentialsReadyCondition, false, cause{reason: tenantv1.TenantSuspendedReason,
			message: "spec.suspend is true: the credentials Secret was deleted, which revoked its token"})
	case c.problem != nil:
		return judge(tenantv1.TenantCredentialsReadyCondition, false, *c.problem)
	case c.waitingForHome:
		return judge(tenantv1.TenantCredentialsReadyCondition, false, cause{reason: tenantv1.WaitingForHomeReason,
			message: fmt.Sprintf("The home namespace %s is not held by the Tenant", HomeNamespace(t))})
	case c.token == nil:
		return judge(tenantv1.TenantCredentialsReadyCondition, false, cause{reason: tenantv1.TenantProgressingReason,
			message: "The token is being issued"})
	case !now.Before(c.token.expiresAt):
		return judge(tenantv1.TenantCredentialsReadyCondition, false, cause{reason: tenantv1.TenantProgressingReason,
			message: "The token expired; a new one is being issued"})
	}
	return judge(tenantv1.TenantCredentialsReadyCondition, true, cause{reason: tenantv1.CredentialsIssuedReason,
		message: fmt.Sprintf("Secret %s/%s holds a token of ServiceAccount %s valid until %s; renewed at %s",
			HomeNamespace(t), c.secretName, ServiceAccountName(t),
			c.token.expiresAt.UTC().Format(time.RFC3339), c.token.renewAt().UTC().Format(time.RFC3339))})
}

// summary derives Ready and Degraded from the three others.
func summary(t *tenantv1.Tenant, obs observation, parts ...judged) (ready, degraded metav1.Condition) {
	degraded = metav1.Condition{Type: tenantv1.TenantDegradedCondition, Status: metav1.ConditionFalse,
		Reason: tenantv1.TenantAsExpectedReason, Message: "Nothing is wrong"}
	for _, p := range parts {
		if p.cause != nil && p.cause.degrading {
			degraded.Status = metav1.ConditionTrue
			degraded.Reason = p.cause.reason
			degraded.Message = p.cause.message
			break
		}
	}
	ready = metav1.Condition{Type: tenantv1.TenantReadyCondition, Status: metav1.ConditionTrue, Reason: tenantv1.TenantActiveReason,
		Message: fmt.Sprintf("%d namespaces; %s", len(obs.namespaces), accessSummary(t, obs.serviceAccountHeld))}
	if t.Spec.Suspend {
		ready.Status = metav1.ConditionFalse
		ready.Reason = tenantv1.TenantSuspendedReason
		ready.Message = "spec.suspend is true: access and credentials are removed; namespaces and data are kept"
		return ready, degraded
	}
	for _, p := range parts {
		if p.condition.Status != metav1.ConditionTrue {
			ready.Status = metav1.ConditionFalse
			ready.Reason = p.condition.Reason
			ready.Message = p.condition.Message
			break
		}
	}
	return ready, degraded
}

func accessSummary(t *tenantv1.Tenant, serviceAccountHeld bool) string {
	subjects := Subjects(t, serviceAccountHeld)
	if len(subjects) == 0 {
		return "nobody is bound"
	}
	return fmt.Sprintf("%s bound to %d subjects", OwnerRole(t), len(subjects))
}

// quotaTotals sums the hard limits (as the spec of each quota sets them) and
// the usage (as the API server's quota controller counts it) of the quotas,
// per resource; nil without quotas.
func quotaTotals(quotas []corev1.ResourceQuota) *tenantv1.TenantQuotaStatus {
	if len(quotas) == 0 {
		return nil
	}
	totals := &tenantv1.TenantQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}
	add := func(into corev1.ResourceList, from corev1.ResourceList) {
		for name, q := range from {
			if sum, ok := into[name]; ok {
				sum.Add(q)
				into[name] = sum
			} else {
				into[name] = q.DeepCopy()
			}
		}
	}
	for _, q := range quotas {
		add(totals.Hard, q.Spec.Hard)
		add(totals.Used, q.Status.Used)
	}
	if len(totals.Hard) == 0 {
		totals.Hard = nil
	}
	if len(totals.Used) == 0 {
		totals.Used = nil
	}
	return totals
}

func credentialsStatus(c credentialObservation) *tenantv1.TenantCredentialsStatus {
	if !c.requested || c.token == nil {
		return nil
	}
	issued, expires := metav1.NewTime(c.token.issuedAt), metav1.NewTime(c.token.expiresAt)
	return &tenantv1.TenantCredentialsStatus{
		SecretName:    c.secretName,
		IssuedAt:      &issued,
		ExpiresAt:     &expires,
		RotationToken: c.token.rotationToken,
	}
}

// failedReason tells a refusal of the spec from a failure that may pass, by
// the message the namespace got.
func failedReason(message string) string {
	if strings.HasPrefix(message, invalidPrefix) {
		return tenantv1.TenantInvalidSpecReason
	}
	return tenantv1.TenantApplyFailedReason
}

// invalidPrefix starts the message of an object the API server refused as
// built from the spec (children.Invalid).
const invalidPrefix = "The API server refused"

func joinMessages(ns []namespaceObservation) string {
	messages := make([]string, 0, len(ns))
	for _, n := range ns {
		messages = append(messages, n.message)
	}
	return strings.Join(messages, "; ")
}

func names(ns []namespaceObservation) string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.name)
	}
	return strings.Join(out, ", ")
}

func describeSubjects(subjects []tenantv1.TenantSubject) string {
	out := make([]string, 0, len(subjects))
	for _, s := range subjects {
		if s.Namespace != "" {
			out = append(out, fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name))
		} else {
			out = append(out, fmt.Sprintf("%s %s", s.Kind, s.Name))
		}
	}
	return strings.Join(out, ", ")
}
