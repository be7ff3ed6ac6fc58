package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a Tenant. Each is always present once the operator has
// seen the Tenant, so that `kubectl wait --for=condition=Ready tenant/NAME`
// and dashboards never have to guess what a missing condition means. The
// names carry the kind because the BackupJob's live in the same package.
const (
	// TenantReadyCondition is True when every namespace of the Tenant is
	// Active, its owners and ServiceAccount are bound, and its credentials
	// (when asked for) hold a valid token. Polarity: True is good.
	TenantReadyCondition = "Ready"

	// TenantNamespacesReadyCondition is True when every namespace in
	// spec.namespaces exists, is the Tenant's, and is not terminating.
	// Polarity: True is good.
	TenantNamespacesReadyCondition = "NamespacesReady"

	// TenantAccessReadyCondition is True when the RoleBindings, quota,
	// LimitRange and NetworkPolicies that the spec asks for are in place in
	// every namespace of the Tenant. Polarity: True is good.
	TenantAccessReadyCondition = "AccessReady"

	// TenantCredentialsReadyCondition is True when the credentials Secret
	// holds a token that is valid now, or when the spec asks for no
	// credentials. Polarity: True is good.
	TenantCredentialsReadyCondition = "CredentialsReady"

	// TenantDegradedCondition is True when something needs a person: a
	// namespace or object is in the way, a role is not allowed, the API
	// server refused a write. Its reason and message name the first cause.
	// Polarity: True is bad.
	TenantDegradedCondition = "Degraded"
)

// Reasons of the Ready condition. When Ready is False for a cause that
// another condition reports, it carries that condition's reason.
const (
	// TenantActiveReason (Ready=True): everything the spec grants is in
	// place.
	TenantActiveReason = "Active"

	// TenantSuspendedReason (Ready=False, AccessReady=False,
	// CredentialsReady=False; Degraded=False): spec.suspend is true, so the
	// RoleBindings and the credentials Secret were removed on purpose. The
	// namespaces and their data are kept.
	TenantSuspendedReason = "Suspended"

	// TenantProgressingReason (Ready=False): objects are being created; no
	// error has been seen.
	TenantProgressingReason = "Progressing"
)

// Reasons of the NamespacesReady condition.
const (
	// NamespacesActiveReason (NamespacesReady=True): every namespace exists
	// and is the Tenant's.
	NamespacesActiveReason = "NamespacesActive"

	// NamespaceConflictReason (NamespacesReady=False, Degraded=True): a
	// namespace of spec.namespaces exists and is not the Tenant's: it was
	// not created by the operator and has no adoption label, or another
	// Tenant holds it. Two Tenants can never share a namespace: the first
	// holds it and the other reports this reason. The namespace is not
	// touched.
	NamespaceConflictReason = "NamespaceConflict"

	// NamespaceTerminatingReason (NamespacesReady=False): a namespace of the
	// Tenant is being deleted; the namespace's own conditions, copied into
	// status.namespaces, say what remains.
	NamespaceTerminatingReason = "NamespaceTerminating"
)

// Reasons of the AccessReady condition.
const (
	// AccessGrantedReason (AccessReady=True): ownerRole is bound to the
	// owners and the ServiceAccount in every namespace; quota and isolation
	// are in place.
	AccessGrantedReason = "AccessGranted"

	// OwnerRoleNotAllowedReason (AccessReady=False, Degraded=True):
	// spec.ownerRole names a ClusterRole that the operator's configuration
	// does not allow it to bind. Nothing is bound.
	OwnerRoleNotAllowedReason = "OwnerRoleNotAllowed"

	// AccessConflictReason (AccessReady=False, Degraded=True): an object the
	// Tenant would create (a RoleBinding, the ServiceAccount, the quota, ...)
	// exists and is not the Tenant's. It is left untouched.
	AccessConflictReason = "AccessConflict"

	// ServiceAccountNotAllowedReason (AccessReady=False,
	// CredentialsReady=False, Degraded=True): spec.serviceAccount.name is
	// default, the ServiceAccount of every pod that names none. The API
	// server refuses it; a Tenant stored before that rule is reported with
	// this reason, and its ServiceAccount is neither made, bound nor given
	// credentials.
	ServiceAccountNotAllowedReason = "ServiceAccountNotAllowed"

	// ServiceAccountConflictReason (AccessReady=False,
	// CredentialsReady=False, Degraded=True): a ServiceAccount of
	// spec.serviceAccount.name exists in the home namespace and is not
	// controlled by the Tenant. It is left untouched, is not bound to
	// ownerRole and gets no credentials; the owners are still bound.
	ServiceAccountConflictReason = "ServiceAccountConflict"

	// WaitingForNamespacesReason (AccessReady=False): access is granted
	// only in namespaces that are the Tenant's and not terminating.
	WaitingForNamespacesReason = "WaitingForNamespaces"
)

// Reasons of the CredentialsReady condition.
const (
	// CredentialsIssuedReason (CredentialsReady=True): the Secret holds a
	// token that is valid now; status.credentials says until when.
	CredentialsIssuedReason = "CredentialsIssued"

	// CredentialsNotRequestedReason (CredentialsReady=True): the spec asks
	// for no credentials.
	CredentialsNotRequestedReason = "CredentialsNotRequested"

	// CredentialsConflictReason (CredentialsReady=False, Degraded=True): a
	// Secret or ServiceAccount of the configured name exists and is not the
	// Tenant's.
	CredentialsConflictReason = "CredentialsConflict"

	// WaitingForHomeReason (CredentialsReady=False): the home namespace is
	// not the Tenant's yet, so neither the ServiceAccount nor its
	// credentials can be made.
	WaitingForHomeReason = "WaitingForHomeNamespace"
)

// Reasons shared by several conditions.
const (
	// TenantAsExpectedReason (Degraded=False): nothing is wrong.
	TenantAsExpectedReason = "AsExpected"

	// TenantInvalidSpecReason (Degraded=True, and False in the condition
	// concerned): the API server refused an object built from the spec. Not
	// retried until the spec changes.
	TenantInvalidSpecReason = "InvalidSpec"

	// TenantApplyFailedReason (Degraded=True, and False in the condition
	// concerned): an object could not be read or written for a reason that
	// may pass (the API server is down, a webhook refused, RBAC is missing).
	// Retried with backoff.
	TenantApplyFailedReason = "ApplyFailed"
)

// Reasons while a Tenant is being deleted.
const (
	// TenantDeletingReason (Ready=False): the Tenant is being deleted with
	// deletionPolicy Delete, confirmed, and some of its namespaces are still
	// terminating; status.namespaces lists them with their own conditions.
	// The Tenant goes away once they are gone or the operator's grace period
	// has passed, whichever comes first: a namespace stuck terminating is
	// reported (and an event says so), not waited on forever.
	TenantDeletingReason = "Deleting"
)

// GetConditions returns the status's conditions.
func (s *TenantStatus) GetConditions() []metav1.Condition { return s.Conditions }

// GetObservedGeneration returns the generation the status describes.
func (s *TenantStatus) GetObservedGeneration() int64 { return s.ObservedGeneration }
