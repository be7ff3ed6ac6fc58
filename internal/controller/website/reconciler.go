// Package website is the controller of Websites (example.com/v1): each
// Website becomes a Deployment, a Service and, when asked, an Ingress, and
// its status tells whether the site is reachable as built.
package website

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/internal/podsecurity"
)

// defaultConflictRecheckInterval is how often a Website blocked by an object
// it does not own looks again. Such objects lack the operator's label, so no
// watch tells when a person removes them.
const defaultConflictRecheckInterval = 30 * time.Second

// Reconciler makes each Website's Deployment, Service and Ingress match its
// spec, and reports what it observed in the Website's status. It is the
// Website's part of the reconcile skeleton of package kit.
type Reconciler struct {
	kit.Base
	// ClusterDomain is the DNS domain of the cluster's Services, used in
	// status.url.
	ClusterDomain string
	// ConflictRecheckInterval is how often a Website blocked by an object it
	// does not own looks again (default 30 s, with 20% jitter).
	ConflictRecheckInterval time.Duration
	// AdoptTutorial lets every Website take over what the tutorial's
	// operator made for it, as the example.com/adopt annotation does for one.
	AdoptTutorial bool
	// PodSecurityVersion is the version of the Pod Security Standards the
	// Websites' pods are judged by: the API server's.
	PodSecurityVersion podsecurity.Version
	// RefuseCatchAllIngress refuses an Ingress of every host (a Website's
	// empty spec.ingress.host), for clusters that allow none: the operator
	// must not make for a user what the cluster would refuse them.
	RefuseCatchAllIngress bool

	// podReadings are the pods of stalled Websites read lately (readPods).
	podReadings *cache.LRUExpireCache

	loop *kit.Loop[websitev1.Website, *websitev1.Website, websitev1.WebsiteStatus, *websitev1.WebsiteStatus]
}

// NewReconciler returns the Website reconciler of mgr, reading and writing
// with c: the manager's client, or a wrapper of it in tests.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *Reconciler {
	r := &Reconciler{
		Base:                    kit.NewBase(mgr, c, "Website", opts.Clock),
		ClusterDomain:           opts.ClusterDomain,
		ConflictRecheckInterval: defaultConflictRecheckInterval,
		PodSecurityVersion:      opts.PodSecurityVersion,
	}
	r.podReadings = cache.NewLRUExpireCacheWithClock(maxPodReadings, r.Clock)
	r.loop = kit.NewLoop(&r.Base, r, func(w *websitev1.Website) *websitev1.WebsiteStatus { return &w.Status }, kit.LoopOptions[websitev1.WebsiteStatus]{
		Name:              "website",
		Kind:              websitev1.GroupVersion.WithKind("Website").GroupKind(),
		Namespaced:        true,
		ReadyCondition:    websitev1.ReadyCondition,
		DegradedCondition: websitev1.DegradedCondition,
		Conditions:        []string{websitev1.ReadyCondition, websitev1.ProgressingCondition, websitev1.DegradedCondition},
		ProgressInterval:  statusProgressInterval,
		HoldFirstProgress: true,
		Summary:           statusSummary,
	})
	return r
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
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.loop.Reconcile(ctx, req)
}

// Sync ensures the Website's children and computes its status from what it
// observed.
func (r *Reconciler) Sync(ctx context.Context, website *websitev1.Website) kit.Outcome[websitev1.WebsiteStatus] {
	obs, childErr := r.reconcileChildren(ctx, website)
	if errors.Is(childErr, platform.ErrNotLeader) {
		return kit.Outcome[websitev1.WebsiteStatus]{Err: childErr}
	}
	if childErr == nil && obs.deployment != nil && obs.servicePresent &&
		adoptionRequested(website, r.AdoptTutorial) && handledByTutorial(website) {
		if err := r.releaseTutorialMarks(ctx, website); err != nil {
			return kit.Outcome[websitev1.WebsiteStatus]{Err: err}
		}
	}
	status := computeStatus(website, obs, r.ClusterDomain, metav1.NewTime(r.Clock.Now()))
	out := kit.Outcome[websitev1.WebsiteStatus]{Status: &status, Err: childErr, SpecRefused: !obs.retry}
	if obs.conflict {
		out.After = wait.Jitter(r.ConflictRecheckInterval, 0.2)
	}
	if obs.podCheck.after > 0 {
		out.After = kit.Soonest(out.After, wait.Jitter(obs.podCheck.after, 0.1))
	}
	return out
}

// Finalizer is "": a Website needs no finalizer of its own. The garbage
// collector removes its children through their owner references, and
// recreating them now would only delay that.
func (r *Reconciler) Finalizer() string { return "" }

// NeedsFinalizer is false: see Finalizer.
func (r *Reconciler) NeedsFinalizer(*websitev1.Website) bool { return false }

// Finalize handles a Website being deleted. What can keep it is a finalizer
// of another controller: the tutorial's, released when the user asked for
// adoption (after its Deployment is adopted, so that it goes with the
// Website as the tutorial's delete handler made it go), and otherwise
// reported.
func (r *Reconciler) Finalize(ctx context.Context, w *websitev1.Website) (kit.Outcome[websitev1.WebsiteStatus], bool) {
	if adoptionRequested(w, r.AdoptTutorial) && handledByTutorial(w) {
		desired, opts, err := r.deploymentIntent(ctx, w)
		if err != nil {
			return kit.Outcome[websitev1.WebsiteStatus]{Err: err}, true
		}
		if opts != nil {
			// Released only once the adopted Deployment comes back through
			// the watch (its event brings the next reconcile): the garbage
			// collector, which watches too, then knows its owner before the
			// owner goes, and deletes it at once.
			result := r.Children.Ensure(ctx, w, desired, &appsv1.Deployment{}, opts...)
			return kit.Outcome[websitev1.WebsiteStatus]{Err: result.Err}, true
		}
		return kit.Outcome[websitev1.WebsiteStatus]{Err: r.releaseTutorialMarks(ctx, w)}, true
	}
	blocker := deletionBlocker(w)
	if blocker == nil {
		return kit.Outcome[websitev1.WebsiteStatus]{}, true
	}
	status := *w.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: websitev1.DegradedCondition, Status: metav1.ConditionTrue,
		Reason: blocker.reason, Message: kit.TruncateMessage(blocker.message),
		ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	status.ObservedGeneration = w.Generation
	return kit.Outcome[websitev1.WebsiteStatus]{Status: &status}, true
}

// statusProgressInterval is how long a Website's status may lag behind a
// change that is only progress: counts, messages and reasons while the
// generation it describes, its readiness and whether something is wrong
// stay the same. A rollout passes through several such states (Deployment
// created, pod created, pod started, endpoints ready), each worth no write
// of its own; a rollout that takes longer than this shows its progress at
// this pace.
const statusProgressInterval = 5 * time.Second

// statusSummary is what makes a status urgent: the generation it
// describes, whether the Website is ready and whether something is wrong
// (a pod that cannot pull its image shows at once).
func statusSummary(status *websitev1.WebsiteStatus) string {
	conditionStatus := func(conditionType string) metav1.ConditionStatus {
		if c := meta.FindStatusCondition(status.Conditions, conditionType); c != nil {
			return c.Status
		}
		return metav1.ConditionUnknown
	}
	return fmt.Sprintf("%d/%s/%s", status.ObservedGeneration, conditionStatus(websitev1.ReadyCondition), conditionStatus(websitev1.DegradedCondition))
}

// SetupWithManager registers the reconciler: it watches Websites, the
// children it owns (a child edited or deleted by hand is put back at once),
// the Websites sharing an Ingress host (one that gives the host up hands it
// to the next claimant) and the EndpointSlices of their Services (a Service
// that routes to no pod shows in the status). Pods are not watched: they
// are read when a rollout stalls (podCheckFor).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	if err := indexFields(context.Background(), mgr); err != nil {
		return err
	}
	return r.loop.Setup(mgr, maxConcurrent,
		r.loop.Owned(&appsv1.Deployment{}),
		r.loop.Owned(&corev1.Service{}),
		r.loop.Owned(&networkingv1.Ingress{}),
		kit.Mapped(&websitev1.Website{}, r.websitesAfterOnHost, hostChanged),
		kit.Mapped(&discoveryv1.EndpointSlice{}, websiteOfEndpointSlice, trimmedFormChanged))
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
