package tenant

import (
	corev1 "k8s.io/api/core/v1"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// observation is what one reconcile saw of a Tenant's children after it
// ensured them. Status is computed from it alone.
type observation struct {
	// namespaces are those of spec.namespaces, in its order.
	namespaces []namespaceObservation
	// roleNotAllowed is true when spec.ownerRole is not among the roles the
	// operator may bind.
	roleNotAllowed bool
	// serviceAccount is why the ServiceAccount could not be made, if so.
	serviceAccount *cause
	// serviceAccountHeld is true when the ServiceAccount the spec names
	// exists and is controlled by the Tenant: only then is it bound.
	serviceAccountHeld bool
	credentials        credentialObservation
	// quotas are the Tenant's ResourceQuotas, one per namespace it holds.
	quotas []corev1.ResourceQuota
	// notReleased is why namespaces removed from spec.namespaces could not
	// be released (they keep the Tenant's labels and access), if so.
	notReleased *cause
}

// namespaceObservation is one namespace of the Tenant.
type namespaceObservation struct {
	name string
	// phase is Active, Conflict, Terminating or Failed; status turns Active
	// into Failed when access could not be granted in it.
	phase   tenantv1.TenantNamespacePhase
	message string
	// conditions are the namespace's own, while it terminates.
	conditions []corev1.NamespaceCondition
	// role and subjects are what its RoleBinding binds, as observed.
	role     string
	subjects []tenantv1.TenantSubject
	// access is why an access object in it could not be made, if so.
	access *cause
	// failedButHeld is true for a namespace whose update failed but which
	// still carries the Tenant's labels: it is still the Tenant's.
	failedButHeld bool
}

// held tells whether the Tenant holds the namespace and may grant access in
// it. A namespace whose update failed (a timeout, a webhook refusing a new
// label) is still held: access in it stays, and isolation still admits it.
func (n namespaceObservation) held() bool {
	return n.phase == tenantv1.NamespaceActive || n.failedButHeld
}

// credentialObservation is what was seen of the credentials.
type credentialObservation struct {
	// requested is true when the spec asks for credentials (suspended or
	// not).
	requested  bool
	secretName string
	// token is the record of the token the Secret holds, when it holds one.
	token *issuedToken
	// problem is why the Secret could not be made or filled, if so.
	problem *cause
	// waitingForHome is true when the home namespace is not held yet.
	waitingForHome bool
}

// cause is a reason and a message for a condition.
type cause struct {
	reason  string
	message string
	// degrading causes need a person and set Degraded.
	degrading bool
}

func problem(reason, message string) *cause {
	return &cause{reason: reason, message: kit.TruncateMessage(message), degrading: true}
}
