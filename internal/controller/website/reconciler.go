// Package website is the controller of Websites (example.com/v1): each
// Website becomes a Deployment, a Service and, when asked, an Ingress, and
// its status tells whether the site is reachable as built.
package website

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/podsecurity"
)

// defaultConflictRecheckInterval is how often a Website blocked by an object
// it does not own looks again. Such objects lack the operator's label, so no
// watch tells when a person removes them.
const defaultConflictRecheckInterval = 30 * time.Second

// WebsiteReconciler makes each Website's Deployment, Service and Ingress
// match its spec, and reports what it observed in the Website's status.
type WebsiteReconciler struct {
	// Client reads from the operator's cache.
	Client client.Client
	// APIReader reads from the API server, for what the cache does not hold:
	// a Deployment of the tutorial's operator that the user asked to adopt.
	APIReader client.Reader
	Children  *children.Manager
	Status    *children.StatusWriter
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// ClusterDomain is the DNS domain of the cluster's Services, used in
	// status.url.
	ClusterDomain string
	// Metrics records the time from a change of a Website to Ready; it may
	// be nil.
	Metrics ReadinessObserver
	// MaxConcurrentReconciles is the number of Websites reconciled at once.
	MaxConcurrentReconciles int
	// ConflictRecheckInterval is how often a Website blocked by an object it
	// does not own looks again (default 30 s, with 20% jitter).
	ConflictRecheckInterval time.Duration
	// AdoptTutorial lets every Website take over what the tutorial's
	// operator made for it, as the example.com/adopt annotation does for one.
	AdoptTutorial bool
	// PodSecurityVersion is the version of the Pod Security Standards the
	// Websites' pods are judged by: the API server's.
	PodSecurityVersion podsecurity.Version

	// retries is the controller's rate limiter, set up with it.
	retries *controller.Retries
}

// ReadinessObserver is told about every status the reconciler computes, so
// that it can measure how long Websites take to become Ready.
type ReadinessObserver interface {
	Observe(w *websitev1.Website, status websitev1.WebsiteStatus)
	Forget(key types.NamespacedName)
}

// +kubebuilder:rbac:groups=example.com,resources=websites,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.com,resources=websites/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=websites/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Website's children to the state its spec asks for and
// writes what it observed to the Website's status, at most once.
func (r *WebsiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	website := &websitev1.Website{}
	if err := r.Client.Get(ctx, req.NamespacedName, website); err != nil {
		if client.IgnoreNotFound(err) == nil && r.Metrics != nil {
			r.Metrics.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !website.DeletionTimestamp.IsZero() {
		return r.reconcileDeletion(ctx, website)
	}

	obs, childErr := r.reconcileChildren(ctx, website)
	if errors.Is(childErr, controller.ErrNotLeader) {
		return controller.StandDown(ctx, childErr)
	}
	if childErr == nil && obs.deployment != nil && obs.servicePresent &&
		adoptionRequested(website, r.AdoptTutorial) && handledByTutorial(website) {
		if err := r.releaseTutorialMarks(ctx, website); err != nil {
			return ctrl.Result{}, err
		}
	}
	status := computeStatus(website, obs, r.ClusterDomain, metav1.NewTime(r.Clock.Now()))
	r.recordBlockerEvent(website, obs.blocker)
	statusDue, err := r.writeStatus(ctx, website, status, statusProgressInterval)
	var after time.Duration
	switch {
	case statusDue > 0:
		after = statusDue
	case obs.conflict:
		after = wait.Jitter(r.ConflictRecheckInterval, 0.2)
	}
	// A failure, of the status write too, does not cancel the recheck of a
	// conflict nor a status held back (controller.Retries).
	if err != nil {
		return r.retries.Result(req, errors.Join(childErr, err), true, after)
	}
	if r.Metrics != nil {
		r.Metrics.Observe(website, status)
	}
	return r.retries.Result(req, childErr, obs.retry, after)
}

// reconcileDeletion handles a Website being deleted. The garbage collector
// removes its children through their owner references; recreating them now
// would only delay that. What can keep the Website is a finalizer of another
// controller: the tutorial's, released when the user asked for adoption
// (after its Deployment is adopted, so that it goes with the Website as the
// tutorial's delete handler made it go), and otherwise reported.
func (r *WebsiteReconciler) reconcileDeletion(ctx context.Context, w *websitev1.Website) (ctrl.Result, error) {
	if adoptionRequested(w, r.AdoptTutorial) && handledByTutorial(w) {
		desired, opts, err := r.deploymentIntent(ctx, w)
		if err != nil {
			return ctrl.Result{}, err
		}
		if opts != nil {
			// Released only once the adopted Deployment comes back through
			// the watch (its event brings the next reconcile): the garbage
			// collector, which watches too, then knows its owner before the
			// owner goes, and deletes it at once.
			result := r.Children.Ensure(ctx, w, desired, &appsv1.Deployment{}, opts...)
			return ctrl.Result{}, result.Err
		}
		r.Status.Forget(w)
		return ctrl.Result{}, r.releaseTutorialMarks(ctx, w)
	}
	blocker := deletionBlocker(w)
	if blocker == nil {
		r.Status.Forget(w)
		return ctrl.Result{}, nil
	}
	r.recordBlockerEvent(w, blocker)
	status := *w.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: websitev1.DegradedCondition, Status: metav1.ConditionTrue,
		Reason: blocker.reason, Message: controller.TruncateMessage(blocker.message),
		ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	status.ObservedGeneration = w.Generation
	_, err := r.writeStatus(ctx, w, status, 0)
	return ctrl.Result{}, err
}

// statusProgressInterval is how long a Website's status may lag behind a
// change that is only progress: counts, messages and reasons while the
// generation it describes, its readiness and whether something is wrong
// stay the same. A rollout passes through several such states (Deployment
// created, pod created, pod started, endpoints ready), each worth no write
// of its own: with child events handled as they come, a one-second
// interval still gave 2% of the Websites of a burst a third status write
// before Ready; a rollout that takes longer than this shows its progress
// at this pace.
const statusProgressInterval = 5 * time.Second

// writeStatus writes status to w when it differs from what w has, or from
// what this process last wrote. With an interval, a change of what
// statusSummary holds is written at once, any other at most once per
// interval, and it returns when to come back for a change it held back;
// without, every change is written at once.
func (r *WebsiteReconciler) writeStatus(ctx context.Context, w *websitev1.Website, status websitev1.WebsiteStatus, interval time.Duration) (time.Duration, error) {
	updated := w.DeepCopy()
	updated.Status = status
	wrote, due, err := r.Status.PatchThrottled(ctx, w, updated, w.Status, status, statusSummary(status), interval)
	if err != nil {
		return 0, err
	}
	if wrote {
		// A Website first seen while being deleted may have no Ready
		// condition yet.
		var ready string
		if c := meta.FindStatusCondition(status.Conditions, websitev1.ReadyCondition); c != nil {
			ready = c.Reason
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Status updated", "ready", ready, "replicas", status.Ready)
	}
	return due, nil
}

// statusSummary is what makes a status urgent: the generation it
// describes, whether the Website is ready and whether something is wrong
// (a pod that cannot pull its image shows at once).
func statusSummary(status websitev1.WebsiteStatus) string {
	conditionStatus := func(conditionType string) metav1.ConditionStatus {
		if c := meta.FindStatusCondition(status.Conditions, conditionType); c != nil {
			return c.Status
		}
		return metav1.ConditionUnknown
	}
	return fmt.Sprintf("%d/%s/%s", status.ObservedGeneration, conditionStatus(websitev1.ReadyCondition), conditionStatus(websitev1.DegradedCondition))
}

// recordBlockerEvent emits a Warning when a Website becomes blocked or
// blocked for another reason, not on every reconcile while it stays so.
func (r *WebsiteReconciler) recordBlockerEvent(w *websitev1.Website, blocker *cause) {
	if blocker == nil {
		return
	}
	previous := meta.FindStatusCondition(w.Status.Conditions, websitev1.DegradedCondition)
	if previous != nil && previous.Reason == blocker.reason && previous.Message == blocker.message {
		return
	}
	r.Recorder.Eventf(w, nil, corev1.EventTypeWarning, blocker.reason, "Reconcile", "%s", blocker.message)
}

// SetupWithManager registers the reconciler: it watches Websites, the
// children it owns (a child edited or deleted by hand is put back at once),
// the Websites' pods (a pod that cannot start shows in the status) and the
// EndpointSlices of their Services (a Service that routes to no pod does).
func (r *WebsiteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.ConflictRecheckInterval == 0 {
		r.ConflictRecheckInterval = defaultConflictRecheckInterval
	}
	r.retries = controller.NewRetries()
	if err := indexFields(context.Background(), mgr); err != nil {
		return err
	}
	if err := r.Status.ForgetDeleted(context.Background(), mgr.GetCache(), &websitev1.Website{}); err != nil {
		return err
	}
	ownedByWebsite := controller.EnqueueControllingOwner(websitev1.GroupVersion.WithKind("Website").GroupKind(), meta.RESTScopeNameNamespace)
	// Not For: its handler would queue every Website listed at start-up
	// behind later changes, those with work pending too (see
	// controller.PendingFirst).
	return ctrl.NewControllerManagedBy(mgr).
		Named("website").
		Watches(&websitev1.Website{}, controller.PendingFirst(func(w *websitev1.Website) int64 { return w.Status.ObservedGeneration }),
			// Status writes, the operator's own included, need no reconcile.
			// Annotations do: example.com/adopt asks for an adoption.
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A child's change is news about a Website already built: it goes
		// before Websites still waiting for their children (see
		// controller.ChildEventPriority).
		Watches(&appsv1.Deployment{}, controller.WithChildEventPriority(ownedByWebsite)).
		Watches(&corev1.Service{}, controller.WithChildEventPriority(ownedByWebsite)).
		Watches(&networkingv1.Ingress{}, controller.WithChildEventPriority(ownedByWebsite)).
		Watches(&corev1.Pod{}, controller.WithChildEventPriority(handler.EnqueueRequestsFromMapFunc(websiteOfPod)),
			builder.WithPredicates(trimmedFormChanged)).
		Watches(&discoveryv1.EndpointSlice{}, controller.WithChildEventPriority(handler.EnqueueRequestsFromMapFunc(websiteOfEndpointSlice)),
			builder.WithPredicates(trimmedFormChanged)).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: r.retries}).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			logger := mgr.GetLogger().WithValues("controller", "website")
			if req != nil {
				logger = logger.WithValues("website", klog.KRef(req.Namespace, req.Name))
			}
			return logger
		}).
		Complete(r)
}

// websiteOfPod maps a pod to the Website that runs it, by the instance label
// that the Website's Deployment puts on its pods.
func websiteOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	name := websiteOfPodLabels(pod.GetLabels())
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
}

// websiteOfEndpointSlice maps an EndpointSlice to the Website whose Service
// it belongs to: the Service is named like the Website, and the slice
// carries the Service's labels.
func websiteOfEndpointSlice(_ context.Context, slice client.Object) []reconcile.Request {
	name := serviceOfSliceLabels(slice.GetLabels())
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: slice.GetNamespace(), Name: name}}}
}
