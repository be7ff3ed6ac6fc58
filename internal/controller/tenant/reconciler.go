// Package tenant is the controller of the Tenant kind: a team's namespaces,
// its access, its rotating credentials, its quota and its isolation.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
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
// match its spec, and reports what it observed and granted in its status.
type Reconciler struct {
	// Client reads from the operator's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, for the rare object the cache
	// cannot answer for (one it has not seen yet).
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock

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
	// MaxConcurrentReconciles is the number of Tenants reconciled at once.
	MaxConcurrentReconciles int

	children *children.Manager
	status   *children.StatusWriter
	// retries is the controller's rate limiter, set up with it.
	retries *controller.Retries
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
	t := &tenantv1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return r.offboard(ctx, t)
	}
	if err := r.addFinalizer(ctx, t); err != nil {
		return ctrl.Result{}, err
	}

	obs, outcome := r.ensureChildren(ctx, t)
	if errors.Is(outcome.err, controller.ErrNotLeader) {
		return controller.StandDown(ctx, outcome.err)
	}
	now := r.Clock.Now()
	status := computeStatus(t, obs, now)
	r.recordDegradedEvent(t, status)
	// A failure, of the status write too, does not cancel the token's
	// renewal nor the recheck of a conflict (controller.Retries).
	after := r.requeueAfter(obs, outcome, now)
	if err := r.patchStatus(ctx, t, status); err != nil {
		return r.retries.Result(req, errors.Join(outcome.err, err), true, after)
	}
	return r.retries.Result(req, outcome.err, outcome.retry, after)
}

// outcome collects the errors of one reconcile. retry is false when every
// error is a refusal of the spec, which retrying cannot cure.
type outcome struct {
	err      error
	retry    bool
	conflict bool
}

func (o *outcome) add(err error, invalid bool) {
	if err == nil {
		return
	}
	o.err = errors.Join(o.err, err)
	o.retry = o.retry || !invalid
}

// record turns the result of one child into a cause for status, and its
// error into the outcome.
func (o *outcome) record(res children.Result, conflictReason string) *cause {
	switch res.Action {
	case children.Conflict:
		o.conflict = true
		return problem(conflictReason, res.Message)
	case children.Invalid:
		o.add(res.Err, true)
		return problem(tenantv1.TenantInvalidSpecReason, res.Message)
	case children.Failed:
		o.add(res.Err, false)
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
		out.add(err, false)
		obs.notReleased = problemOf(err)
	}

	var held []string
	for _, n := range obs.namespaces {
		if n.held() {
			held = append(held, n.name)
		}
	}
	slices.Sort(held)
	for i := range obs.namespaces {
		if n := &obs.namespaces[i]; n.held() {
			if quota := r.ensureAccess(ctx, t, n, held, !obs.roleNotAllowed, &out); quota != nil {
				obs.quotas = append(obs.quotas, *quota)
			}
		}
	}

	homeHeld := len(obs.namespaces) > 0 && obs.namespaces[0].held()
	var saUID types.UID
	if homeHeld {
		saUID, obs.serviceAccount = r.ensureServiceAccount(ctx, t, &out)
	}
	obs.credentials = r.ensureCredentials(ctx, t, homeHeld, saUID, obs.serviceAccount, &out)
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

// addFinalizer puts the operator's finalizer on t before anything is made
// for it, so that a deletion always meets the offboarding.
func (r *Reconciler) addFinalizer(ctx context.Context, t *tenantv1.Tenant) error {
	if controllerutil.ContainsFinalizer(t, tenantv1.TenantFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(t, tenantv1.TenantFinalizer)
	if err := r.Client.Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("add the finalizer to Tenant %s: %w", t.Name, err)
	}
	return nil
}

// patchStatus writes status when it differs from what t has.
func (r *Reconciler) patchStatus(ctx context.Context, t *tenantv1.Tenant, status tenantv1.TenantStatus) error {
	updated := t.DeepCopy()
	updated.Status = status
	wrote, err := r.status.Patch(ctx, t, updated, t.Status, status)
	if err != nil {
		return fmt.Errorf("Tenant %s: %w", t.Name, err)
	}
	if wrote {
		ctrl.LoggerFrom(ctx).V(1).Info("Status updated",
			"ready", meta.FindStatusCondition(status.Conditions, tenantv1.TenantReadyCondition).Reason, "namespaces", status.Ready)
	}
	return nil
}

// recordDegradedEvent emits a Warning when the Tenant becomes Degraded, or
// Degraded for another cause, not on every reconcile while it stays so.
func (r *Reconciler) recordDegradedEvent(t *tenantv1.Tenant, status tenantv1.TenantStatus) {
	now := meta.FindStatusCondition(status.Conditions, tenantv1.TenantDegradedCondition)
	if now == nil || now.Status != "True" {
		return
	}
	previous := meta.FindStatusCondition(t.Status.Conditions, tenantv1.TenantDegradedCondition)
	if previous != nil && previous.Status == now.Status && previous.Reason == now.Reason && previous.Message == now.Message {
		return
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, now.Reason, "Reconcile", "%s", now.Message)
}

// SetupWithManager registers the reconciler: it watches Tenants (spec and
// annotation changes), the access objects they control, and the namespaces
// labelled for them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.AllowedOwnerRoles == nil {
		r.AllowedOwnerRoles = DefaultAllowedOwnerRoles
	}
	if r.ConflictRecheckInterval == 0 {
		r.ConflictRecheckInterval = defaultConflictRecheckInterval
	}
	if r.DeletionGracePeriod == 0 {
		r.DeletionGracePeriod = defaultDeletionGracePeriod
	}
	r.retries = controller.NewRetries()
	if r.APIServerURL == "" {
		r.APIServerURL = mgr.GetConfig().Host
	}
	r.children = children.NewManager(mgr, tenantKind, r.Recorder)
	r.status = children.NewStatusWriter(r.Client).ReadingLiveFrom(mgr.GetAPIReader())
	if err := r.status.ForgetDeleted(context.Background(), mgr.GetCache(), &tenantv1.Tenant{}); err != nil {
		return err
	}
	ownedByTenant := controller.EnqueueControllingOwner(tenantv1.GroupVersion.WithKind(tenantKind).GroupKind(), meta.RESTScopeNameRoot)
	// Not For: see controller.PendingFirst.
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		Watches(&tenantv1.Tenant{}, controller.PendingFirst(func(t *tenantv1.Tenant) int64 { return t.Status.ObservedGeneration }),
			// Status writes need no reconcile; the confirmation annotation
			// and a deletion (which bumps the generation) do.
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted))).
		// A child's change is news about a Tenant already built: it goes
		// before Tenants still waiting for theirs (see
		// controller.ChildEventPriority).
		Watches(&rbacv1.RoleBinding{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&corev1.ServiceAccount{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&corev1.Secret{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&corev1.ResourceQuota{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&corev1.LimitRange{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&networkingv1.NetworkPolicy{}, controller.WithChildEventPriority(ownedByTenant)).
		Watches(&corev1.Namespace{}, controller.WithChildEventPriority(handler.EnqueueRequestsFromMapFunc(tenantOfNamespace))).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: r.retries}).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			logger := mgr.GetLogger().WithValues("controller", "tenant")
			if req != nil {
				logger = logger.WithValues("tenant", klog.KRef("", req.Name))
			}
			return logger
		}).
		Complete(r)
}

// deletionStarted lets through the update that marks a Tenant deleted, in
// case its generation does not change with it.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// tenantOfNamespace maps a namespace to the Tenant that holds it, by label.
func tenantOfNamespace(_ context.Context, ns client.Object) []reconcile.Request {
	name := ns.GetLabels()[tenantv1.TenantLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
