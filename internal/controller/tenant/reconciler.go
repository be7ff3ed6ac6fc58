// Package tenant is the controller of the Tenant kind: a team's namespaces,
// its access, its rotating credentials, its quota and its isolation.
package tenant

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
)

// DefaultAllowedOwnerRoles are the ClusterRoles a Tenant may ask for when
// the operator is not configured otherwise: the built-in user-facing roles.
// The operator's RBAC grants `bind` on exactly these (see the markers
// below); allowing another role takes both a change here and in the RBAC.
var DefaultAllowedOwnerRoles = []string{"admin", "edit", "view"}

const (
	// defaultConflictRecheckInterval is how often a Tenant blocked by a
	// namespace or object it does not hold looks again: such objects lack
	// the Tenant's label, so no watch tells when a person fixes them.
	defaultConflictRecheckInterval = 30 * time.Second
	// defaultDeletionGracePeriod is how long the deletion of a Tenant with
	// a confirmed Delete policy waits for its namespaces to terminate,
	// reporting them, before the Tenant goes away anyway.
	defaultDeletionGracePeriod = time.Minute
	// deletionPollInterval is how often a Tenant waiting for its namespaces
	// to terminate looks again, besides the namespace watch.
	deletionPollInterval = 5 * time.Second
)

// Reconciler makes each Tenant's namespaces, access objects and credentials
// match its spec, and reports what it observed and granted in its status. It
// is the Tenant's part of the reconcile skeleton of package kit.
type Reconciler struct {
	kit.Base

	// AllowedOwnerRoles are the ClusterRoles the operator binds for a
	// Tenant (default DefaultAllowedOwnerRoles). Must match the resourceNames
	// of the operator's `bind` rule.
	AllowedOwnerRoles []string
	// APIServerURL is the server of the kubeconfig in the credentials
	// Secrets: how tenants reach the API server.
	APIServerURL string
	// CAData is the API server's CA in the kubeconfig, PEM; may be empty
	// when the server's certificate is publicly trusted.
	CAData []byte
	// DeletionGracePeriod bounds how long a Tenant being deleted with a
	// confirmed Delete policy waits for its namespaces to terminate (default
	// one minute).
	DeletionGracePeriod time.Duration
	// ConflictRecheckInterval is how often a Tenant in conflict with an
	// object it does not hold looks again (default 30 s, 20 % jitter).
	ConflictRecheckInterval time.Duration

	loop *kit.Loop[tenantv1.Tenant, *tenantv1.Tenant, tenantv1.TenantStatus, *tenantv1.TenantStatus]
}

// NewReconciler returns the Tenant reconciler of mgr, reading and writing
// with c: the manager's client, or a wrapper of it in tests. Its tenants
// reach the API server as the operator does, with the operator's CA.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *Reconciler {
	r := &Reconciler{
		Base:                    kit.NewBase(mgr, c, tenantKind, opts.Clock),
		AllowedOwnerRoles:       DefaultAllowedOwnerRoles,
		APIServerURL:            mgr.GetConfig().Host,
		DeletionGracePeriod:     defaultDeletionGracePeriod,
		ConflictRecheckInterval: defaultConflictRecheckInterval,
	}
	r.loop = kit.NewLoop(&r.Base, r, func(t *tenantv1.Tenant) *tenantv1.TenantStatus { return &t.Status }, kit.LoopOptions[tenantv1.TenantStatus]{
		Name:              "tenant",
		Kind:              tenantv1.GroupVersion.WithKind(tenantKind).GroupKind(),
		ReadyCondition:    tenantv1.TenantReadyCondition,
		DegradedCondition: tenantv1.TenantDegradedCondition,
		Conditions: []string{tenantv1.TenantReadyCondition, tenantv1.TenantNamespacesReadyCondition, tenantv1.TenantAccessReadyCondition,
			tenantv1.TenantCredentialsReadyCondition, tenantv1.TenantDegradedCondition},
	})
	return r
}

// +kubebuilder:rbac:groups=example.com,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.com,resources=tenants/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=tenants/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=admin;edit;view
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Tenant's children to the state its spec asks for and
// writes what it observed to its status, at most once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.loop.Reconcile(ctx, req)
}

// Sync ensures the Tenant's namespaces and what it has in them, and
// computes its status from what it observed.
func (r *Reconciler) Sync(ctx context.Context, t *tenantv1.Tenant) kit.Outcome[tenantv1.TenantStatus] {
	obs, out := r.ensureChildren(ctx, t)
	if errors.Is(out.Err, platform.ErrNotLeader) {
		return kit.Outcome[tenantv1.TenantStatus]{Err: out.Err}
	}
	now := r.Clock.Now()
	status := computeStatus(t, obs, now)
	return kit.Outcome[tenantv1.TenantStatus]{Status: &status, Err: out.Err, SpecRefused: !out.Retry, After: r.requeueAfter(obs, out, now)}
}

// Finalizer is the Tenant's: it makes sure a deletion always meets the
// offboarding.
func (r *Reconciler) Finalizer() string { return tenantv1.TenantFinalizer }

// NeedsFinalizer is always true: every Tenant holds namespaces and access.
func (r *Reconciler) NeedsFinalizer(*tenantv1.Tenant) bool { return true }

// outcome collects the errors of one reconcile. retry is false when every
// error is a refusal of the spec, which retrying cannot cure.
type outcome struct {
	kit.Errors
	conflict bool
	// created are the children this reconcile made, told in one event.
	created children.Creations
}

// record turns the result of one child into a cause for status, and its
// error into the outcome.
func (o *outcome) record(res children.Result, conflictReason string) *cause {
	switch res.Action {
	case children.Conflict:
		o.conflict = true
		return problem(conflictReason, res.Message)
	case children.Invalid:
		o.Add(res.Err, true)
		return problem(tenantv1.TenantInvalidSpecReason, res.Message)
	case children.Failed:
		o.Add(res.Err, false)
		return problem(tenantv1.TenantApplyFailedReason, res.Message)
	}
	return nil
}

// ensureChildren ensures the namespaces, then, in those the Tenant holds,
// its access objects, then its ServiceAccount and credentials.
func (r *Reconciler) ensureChildren(ctx context.Context, t *tenantv1.Tenant) (observation, outcome) {
	var out outcome
	obs := observation{roleNotAllowed: !slices.Contains(r.AllowedOwnerRoles, OwnerRole(t))}
	obs.namespaces = r.ensureNamespaces(ctx, t, &out)
	if err := r.releaseRemovedNamespaces(ctx, t); err != nil {
		out.Add(err, false)
		obs.notReleased = problemOf(err)
	}

	// The ServiceAccount comes before the RoleBindings: it is bound only
	// once it exists and is the Tenant's.
	homeHeld := len(obs.namespaces) > 0 && obs.namespaces[0].held()
	var saUID types.UID
	if homeHeld {
		saUID, obs.serviceAccount = r.ensureServiceAccount(ctx, t, &out)
	}
	obs.serviceAccountHeld = saUID != ""

	var held []string
	for _, n := range obs.namespaces {
		if n.held() {
			held = append(held, n.name)
		}
	}
	slices.Sort(held)
	for i := range obs.namespaces {
		if n := &obs.namespaces[i]; n.held() {
			if quota := r.ensureAccess(ctx, t, n, held, !obs.roleNotAllowed, obs.serviceAccountHeld, &out); quota != nil {
				obs.quotas = append(obs.quotas, *quota)
			}
		}
	}

	obs.credentials = r.ensureCredentials(ctx, t, homeHeld, saUID, obs.serviceAccount, &out)
	r.Children.RecordCreated(t, &out.created)
	return obs, out
}

func (r *Reconciler) requeueAfter(obs observation, out outcome, now time.Time) time.Duration {
	var after time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	if out.conflict {
		soonest(wait.Jitter(r.ConflictRecheckInterval, 0.2))
	}
	if tok := obs.credentials.token; tok != nil {
		soonest(untilRenewal(now, *tok))
	}
	return after
}

// SetupWithManager registers the reconciler: it watches Tenants, the access
// objects they control, and the namespaces labelled for them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return r.loop.Setup(mgr, maxConcurrent,
		r.loop.Owned(&rbacv1.RoleBinding{}),
		r.loop.Owned(&corev1.ServiceAccount{}),
		r.loop.Owned(&corev1.Secret{}),
		r.loop.Owned(&corev1.ResourceQuota{}),
		r.loop.Owned(&corev1.LimitRange{}),
		r.loop.Owned(&networkingv1.NetworkPolicy{}),
		kit.Mapped(&corev1.Namespace{}, tenantOfNamespace))
}

// tenantOfNamespace maps a namespace to the Tenant that holds it, by label.
func tenantOfNamespace(_ context.Context, ns client.Object) []reconcile.Request {
	name := ns.GetLabels()[tenantv1.TenantLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
