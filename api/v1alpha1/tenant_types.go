package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations of the Tenant API: the operator sets the first, a
// person sets the others.
const (
	// TenantLabel marks a namespace as belonging to the Tenant it names. It
	// is the only record of that ownership: namespaces carry no owner
	// reference, so that no cascade (a CRD uninstall, a Tenant deleted by
	// mistake) can delete a tenant's data. Every access object of a Tenant
	// carries it too.
	TenantLabel = "example.com/tenant"

	// TenantAdoptLabel, set by a person on an existing namespace to the
	// name of a Tenant, lets that Tenant take the namespace over. Without
	// it an existing namespace is never taken over.
	TenantAdoptLabel = "example.com/tenant-adopt"

	// TenantConfirmDeleteAnnotation, set on a Tenant to its own name,
	// confirms deletionPolicy Delete: only then does deleting the Tenant
	// delete its namespaces.
	TenantConfirmDeleteAnnotation = "example.com/confirm-delete"

	// TenantFinalizer is the operator's finalizer on Tenants: it releases
	// (or, with a confirmed Delete policy, deletes) the namespaces before
	// the Tenant goes away.
	TenantFinalizer = "example.com/tenant-offboarding"
)

// Keys of a Tenant's credentials Secret (spec.credentials.secretName), which
// its automation reads.
const (
	// TenantKubeconfigKey is a kubeconfig of the Tenant's ServiceAccount.
	TenantKubeconfigKey = "kubeconfig"
	// TenantTokenKey is its token alone, TenantNamespaceKey the Tenant's
	// home namespace, TenantCAKey the API server's CA (PEM).
	TenantTokenKey     = "token"
	TenantNamespaceKey = "namespace"
	TenantCAKey        = "ca.crt"
)

// TenantSpec is a team's place on the cluster: its namespaces, who may work
// there, the credentials of its automation, its quota and its isolation.
//
// +kubebuilder:validation:XValidation:rule="!has(self.credentials) || has(self.serviceAccount)",message="credentials are issued for the tenant's ServiceAccount: set serviceAccount too",fieldPath=".credentials",reason=FieldValueRequired
type TenantSpec struct {
	// namespaces are the tenant's namespaces, at least one. The first is the
	// tenant's home: it holds the ServiceAccount and the credentials Secret,
	// and cannot be changed once created. Others may be added and removed; a
	// namespace removed from the list is released (access removed, labels
	// dropped), never deleted. A namespace that already exists is taken over
	// only when it carries the label example.com/tenant-adopt=<tenant name>.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.all(n, !n.startsWith('kube-') && n != 'default')",message="the kube-* namespaces and default belong to the cluster, not to a tenant"
	// +kubebuilder:validation:XValidation:rule="self[0] == oldSelf[0]",message="the first namespace is the tenant's home and cannot be changed"
	Namespaces []string `json:"namespaces"`

	// owners are the people, groups and ServiceAccounts bound to ownerRole
	// in every namespace of the tenant, as RBAC subjects.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(o, o.kind == s.kind && o.name == s.name && (has(o.__namespace__) ? o.__namespace__ : '-') == (has(s.__namespace__) ? s.__namespace__ : '-')))",message="owners must be unique"
	Owners []TenantSubject `json:"owners,omitempty"`

	// ownerRole is the ClusterRole bound to the owners and the
	// ServiceAccount in each namespace. Defaults to admin. The operator binds
	// only the roles its configuration allows (by default admin, edit and
	// view); any other is reported in the AccessReady condition and not
	// bound.
	// +optional
	// +kubebuilder:default=admin
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$`
	OwnerRole string `json:"ownerRole,omitempty"`

	// serviceAccount, when set, makes a ServiceAccount in the home namespace
	// for the tenant's automation, bound to ownerRole like the owners.
	// +optional
	ServiceAccount *TenantServiceAccount `json:"serviceAccount,omitempty"`

	// credentials, when set, keeps a Secret in the home namespace holding a
	// kubeconfig for the ServiceAccount, with a short-lived token bound to
	// the Secret and renewed before it expires. Requires serviceAccount.
	// +optional
	Credentials *TenantCredentials `json:"credentials,omitempty"`

	// quota, when set, puts a ResourceQuota (and optionally a LimitRange)
	// into every namespace of the tenant.
	// +optional
	Quota *TenantQuota `json:"quota,omitempty"`

	// isolation is the network isolation of the tenant's namespaces:
	// SameTenant (the default) admits traffic into their pods only from the
	// tenant's own namespaces; None adds no NetworkPolicy.
	// +optional
	// +kubebuilder:default=SameTenant
	Isolation TenantIsolation `json:"isolation,omitempty"`

	// podSecurity is the Pod Security Standard enforced on the tenant's
	// namespaces: restricted (the default), baseline or privileged.
	// +optional
	// +kubebuilder:default=restricted
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// suspend, when true, removes the tenant's access: the RoleBindings and
	// the credentials Secret (which revokes its token) are deleted. The
	// namespaces, their data, the quota and running workloads stay.
	// Offboarding step one.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// deletionPolicy says what deleting the Tenant does to its namespaces:
	// Retain (the default) keeps them and their data and only removes the
	// tenant's access and labels; Delete deletes them, but only when the
	// Tenant also carries the annotation example.com/confirm-delete set to
	// its own name.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy TenantDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// TenantSubject is an RBAC subject, as rbac.authorization.k8s.io/v1 has it.
//
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.__namespace__) : !has(self.__namespace__)",message="namespace is required for a ServiceAccount and forbidden for a User or Group",fieldPath=".namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.apiGroup) || (self.kind == 'ServiceAccount' ? self.apiGroup.size() == 0 : self.apiGroup == 'rbac.authorization.k8s.io')",message="apiGroup is rbac.authorization.k8s.io for a User or Group and empty for a ServiceAccount",fieldPath=".apiGroup"
type TenantSubject struct {
	// kind of the subject: User, Group or ServiceAccount.
	// +required
	Kind SubjectKind `json:"kind"`

	// apiGroup of the subject, as RBAC wants it: rbac.authorization.k8s.io
	// for a User or Group, empty for a ServiceAccount. The operator fills it
	// in when it is left out.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	APIGroup string `json:"apiGroup,omitempty"`

	// name of the user, group or ServiceAccount, as the cluster's
	// authenticator reports it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of a ServiceAccount; not set for a User or Group.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// SubjectKind is the kind of an RBAC subject.
// +kubebuilder:validation:Enum=User;Group;ServiceAccount
type SubjectKind string

const (
	UserSubject           SubjectKind = "User"
	GroupSubject          SubjectKind = "Group"
	ServiceAccountSubject SubjectKind = "ServiceAccount"
)

// TenantServiceAccount is the ServiceAccount of the tenant's automation.
type TenantServiceAccount struct {
	// name of the ServiceAccount in the home namespace. Defaults to tenant.
	// It cannot be default: that is the ServiceAccount of every pod that
	// names none, so binding it would give ownerRole to all of them. A
	// ServiceAccount of this name that the Tenant did not make is never
	// taken over, bound or given credentials.
	// +optional
	// +kubebuilder:default=tenant
	// +kubebuilder:validation:XValidation:rule="self != 'default'",message="the ServiceAccount default is used by every pod that names none: binding it would give ownerRole to all of them; choose another name"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`
}

// TenantCredentials is the kubeconfig Secret of the tenant's ServiceAccount.
type TenantCredentials struct {
	// secretName is the Secret in the home namespace that holds the
	// kubeconfig (key kubeconfig) and the token (key token). Defaults to
	// tenant-kubeconfig.
	// +optional
	// +kubebuilder:default=tenant-kubeconfig
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`

	// expiration is how long a token lives, from 10m to 720h (30 days).
	// Defaults to 24h. A token is renewed at 80 % of its life; the API server
	// may grant a shorter one than asked for.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m') && duration(self) <= duration('720h')",message="expiration must be between 10m and 720h"
	Expiration *metav1.Duration `json:"expiration,omitempty"`

	// rotationToken forces a rotation when it changes: the Secret is
	// replaced by a new one with a new token, and every token issued for the
	// old Secret stops working at once. Any value will do, such as a date.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RotationToken string `json:"rotationToken,omitempty"`
}

// TenantQuota is the quota of each of the tenant's namespaces.
type TenantQuota struct {
	// hard is the ResourceQuota of each namespace, such as requests.cpu: 4,
	// requests.memory: 8Gi, pods: 50. The API server enforces it; the
	// tenant's totals show in status.quota.
	// +required
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	Hard corev1.ResourceList `json:"hard"`

	// containerDefaults, when set, puts a LimitRange into each namespace
	// that gives containers without requests or limits these.
	// +optional
	TenantContainerDefaults *TenantContainerDefaults `json:"containerDefaults,omitempty"`
}

// TenantContainerDefaults are the requests and limits given to containers that set
// none.
//
// +kubebuilder:validation:XValidation:rule="has(self.defaultRequest) || has(self.default)",message="set defaultRequest, default or both"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultRequest) || !has(self.default) || self.defaultRequest.all(r, !(r in self.default) || quantity(string(self.defaultRequest[r])).compareTo(quantity(string(self.default[r]))) <= 0)",message="each default limit must be at least its default request",fieldPath=".default",reason=FieldValueInvalid
type TenantContainerDefaults struct {
	// defaultRequest is the request of a container that sets none.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`

	// default is the limit of a container that sets none.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	Default corev1.ResourceList `json:"default,omitempty"`
}

// TenantIsolation is the network isolation of a tenant's namespaces.
// +kubebuilder:validation:Enum=SameTenant;None
type TenantIsolation string

const (
	// SameTenantIsolation admits traffic into the tenant's pods only from
	// pods in the tenant's own namespaces (a NetworkPolicy per namespace).
	// Outgoing traffic is not restricted.
	SameTenantIsolation TenantIsolation = "SameTenant"
	// NoIsolation adds no NetworkPolicy.
	NoIsolation TenantIsolation = "None"
)

// PodSecurityLevel is a Pod Security Standard level.
// +kubebuilder:validation:Enum=restricted;baseline;privileged
type PodSecurityLevel string

const (
	RestrictedPodSecurity PodSecurityLevel = "restricted"
	BaselinePodSecurity   PodSecurityLevel = "baseline"
	PrivilegedPodSecurity PodSecurityLevel = "privileged"
)

// TenantDeletionPolicy is what deleting a Tenant does to its namespaces.
// +kubebuilder:validation:Enum=Retain;Delete
type TenantDeletionPolicy string

const (
	// RetainNamespaces keeps the namespaces and their data; only the
	// tenant's access and labels are removed.
	RetainNamespaces TenantDeletionPolicy = "Retain"
	// DeleteNamespaces deletes the namespaces, when the deletion is
	// confirmed by TenantConfirmDeleteAnnotation.
	DeleteNamespaces TenantDeletionPolicy = "Delete"
)

// TenantStatus is what the operator last observed and granted.
type TenantStatus struct {
	// observedGeneration is the metadata.generation of the Tenant that this
	// status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, NamespacesReady, AccessReady, CredentialsReady and
	// Degraded, with a reason and a message for people.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// namespaces are the tenant's namespaces as observed, with what is
	// granted in each; during a deletion also those still terminating.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Namespaces []TenantNamespaceStatus `json:"namespaces,omitempty"`

	// ready counts the namespaces that are Active with their access in
	// place, as ready/desired, for example 2/2.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Ready string `json:"ready,omitempty"`

	// quota is the sum over the tenant's namespaces of their ResourceQuota's
	// hard limits and usage.
	// +optional
	Quota *TenantQuotaStatus `json:"quota,omitempty"`

	// credentials describe the token in the credentials Secret.
	// +optional
	Credentials *TenantCredentialsStatus `json:"credentials,omitempty"`
}

// TenantNamespaceStatus is one namespace of the tenant as observed.
type TenantNamespaceStatus struct {
	// name of the namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// phase of the namespace for the tenant.
	// +required
	Phase TenantNamespacePhase `json:"phase"`

	// message says why a namespace is not Active.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// role is the ClusterRole bound in the namespace, empty when none is.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	Role string `json:"role,omitempty"`

	// subjects are the subjects bound to role in the namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=33
	Subjects []TenantSubject `json:"subjects,omitempty"`

	// conditions are the namespace's own conditions while it terminates:
	// what the namespace controller still waits for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Conditions []TenantNamespaceCondition `json:"conditions,omitempty"`
}

// TenantNamespaceCondition is a condition of a terminating namespace, copied from
// its status.
type TenantNamespaceCondition struct {
	// type of the condition, such as NamespaceContentRemaining.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Type string `json:"type"`
	// status: True, False or Unknown.
	// +required
	// +kubebuilder:validation:MaxLength=16
	Status string `json:"status"`
	// reason, in CamelCase.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// message for people.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// TenantNamespacePhase is where a namespace stands for its tenant.
// +kubebuilder:validation:Enum=Active;Pending;Conflict;Terminating;Failed
type TenantNamespacePhase string

const (
	// NamespaceActive: the namespace is the tenant's and what the spec
	// grants in it is in place.
	NamespaceActive TenantNamespacePhase = "Active"
	// NamespacePending: the namespace is the tenant's; some of what the spec
	// grants in it is not in place yet.
	NamespacePending TenantNamespacePhase = "Pending"
	// NamespaceConflict: a namespace of that name exists and is not the
	// tenant's (it has no adoption label, or another Tenant holds it). The
	// operator leaves it untouched.
	NamespaceConflict TenantNamespacePhase = "Conflict"
	// NamespaceTerminating: the namespace is being deleted.
	NamespaceTerminating TenantNamespacePhase = "Terminating"
	// NamespaceFailed: the namespace, or what it should hold, could not be
	// written; the message says why.
	NamespaceFailed TenantNamespacePhase = "Failed"
)

// TenantQuotaStatus is the tenant-wide sum of its ResourceQuotas.
type TenantQuotaStatus struct {
	// hard is the sum of the quotas' hard limits.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// used is the sum of the quotas' usage, as the API server counts it.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Used corev1.ResourceList `json:"used,omitempty"`
}

// TenantCredentialsStatus describes the token held by the credentials
// Secret.
type TenantCredentialsStatus struct {
	// secretName is the Secret holding the kubeconfig, in the home
	// namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`
	// issuedAt is when the current token was issued.
	// +optional
	IssuedAt *metav1.Time `json:"issuedAt,omitempty"`
	// expiresAt is when the current token expires; the operator renews it
	// at 80 % of its life.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// rotationToken is the spec.credentials.rotationToken the current token
	// was issued for.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RotationToken string `json:"rotationToken,omitempty"`
}

// Tenant is a team on the cluster: its namespaces, the people and automation
// that may work in them, credentials that rotate, quota and network
// isolation. The namespaces are labelled, never owned, so that deleting the
// Tenant (or its CRD) cannot delete the team's data unless deletionPolicy
// Delete is set and confirmed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tnt,categories={platform}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Owners",type=string,JSONPath=`.spec.owners[*].name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be at most 63 characters of lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, because namespaces carry it in a label"
type Tenant struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Tenant.
	// +required
	Spec TenantSpec `json:"spec"`

	// status is the observed state of the Tenant, written by the operator.
	// +optional
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tenant{}, &TenantList{})
}
