package website

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
)

// conflictReasons names, per kind, the reason given when an object of the
// Website's name is in the way.
var conflictReasons = map[string]string{
	"Deployment": websitev1.DeploymentConflictReason,
	"Service":    websitev1.ServiceConflictReason,
	"Ingress":    websitev1.IngressConflictReason,
}

// reconcileChildren ensures each child and observes the result. Children are
// independent: a conflict on the Service does not stop the Deployment.
func (r *Reconciler) reconcileChildren(ctx context.Context, w *websitev1.Website) (observation, error) {
	var obs observation
	var errs []error
	note := func(kind string, result children.Result) {
		switch result.Action {
		case children.Conflict:
			obs.blocker = firstCause(obs.blocker, &cause{conflictReasons[kind], result.Message})
			obs.conflict = true
		case children.Invalid:
			obs.blocker = firstCause(obs.blocker, &cause{websitev1.InvalidSpecReason, kit.TruncateMessage(result.Message)})
			errs = append(errs, result.Err)
		case children.Failed:
			// A conflict with another writer passes with the retry; it is
			// nothing for a person to look at.
			if !errors.Is(result.Err, platform.ErrNotLeader) && !apierrors.IsConflict(result.Err) {
				obs.blocker = firstCause(obs.blocker, &cause{websitev1.ApplyFailedReason, kit.TruncateMessage(result.Message)})
			}
			obs.retry = true
			errs = append(errs, result.Err)
		}
	}

	deployment := &appsv1.Deployment{}
	desired, opts, err := r.deploymentIntent(ctx, w)
	result := children.Result{Action: children.Failed, Err: err}
	if err == nil {
		result = r.Children.Ensure(ctx, w, desired, deployment, append(opts, children.Judge(judgePod(r.PodSecurityVersion)))...)
	} else {
		result.Message = err.Error()
	}
	if result.Action == children.Conflict && handledByTutorial(w) && isTutorialDeployment(w, deployment) {
		result.Message = tutorialConflictMessage(w, deployment)
	}
	note("Deployment", result)
	if result.Exists {
		obs.deployment = deployment
		// A failed or refused update leaves a Deployment of an older spec.
		obs.deploymentCurrent = result.Action != children.Failed && result.Action != children.Invalid
	}

	service := &corev1.Service{}
	result = r.Children.Ensure(ctx, w, DesiredService(w), service, children.WithoutCreateEvent())
	note("Service", result)
	obs.servicePresent = result.Exists

	r.reconcileIngress(ctx, w, &obs, note)

	if obs.deployment != nil {
		if err := r.observePods(ctx, w, &obs); err != nil {
			note("Deployment", children.Result{Action: children.Failed, Err: err, Message: err.Error()})
		}
	}
	if errs == nil {
		return obs, nil
	}
	return obs, errors.Join(errs...)
}

// reconcileIngress ensures w's Ingress, or deletes the one w made when the
// spec asks for none or its host is held by a Website of another
// namespace. Results are noted as the other children's.
func (r *Reconciler) reconcileIngress(ctx context.Context, w *websitev1.Website, obs *observation, note func(string, children.Result)) {
	desired := DesiredIngress(w)
	if refused := refuseIngress(w, r.RefuseCatchAllIngress); desired != nil && refused != nil {
		// Refused like a child the API server refused: no Ingress, one
		// made before the operator refused it deleted, no retry until the
		// spec changes.
		obs.blocker = firstCause(obs.blocker, refused)
		desired = nil
	}
	if desired != nil {
		holder, err := r.hostHolderOf(ctx, w)
		switch {
		case err != nil:
			// Unknown whose the host is: the Ingress stays as it is.
			note("Ingress", children.Result{Action: children.Failed, Err: err, Message: err.Error()})
			return
		case holder != nil:
			// The host is another namespace's: no Ingress of ours may serve
			// it, one made before that Website claimed it included.
			obs.blocker = firstCause(obs.blocker, hostConflict(w, holder))
			desired = nil
		}
	}
	if desired != nil {
		result := r.Children.Ensure(ctx, w, desired, &networkingv1.Ingress{}, children.WithoutCreateEvent())
		note("Ingress", result)
		obs.ingressPresent = result.Exists
		return
	}
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	if _, err := r.Children.Delete(ctx, w, key, &networkingv1.Ingress{}); err != nil {
		note("Ingress", children.Result{Action: children.Failed, Err: err, Message: err.Error()})
	}
}

// observePods reads the Website's pods, when its rollout has stalled (see
// podCheckFor), and the endpoints its Service routes to, from the cache.
func (r *Reconciler) observePods(ctx context.Context, w *websitev1.Website, obs *observation) error {
	obs.podCheck = podCheckFor(obs.deployment, r.Clock.Now())
	if obs.podCheck.now {
		pods, err := r.readPods(ctx, w)
		if err != nil {
			return err
		}
		obs.pods = pods
	}

	if !obs.servicePresent {
		return nil
	}
	// The slices are only read, in this reconcile: the cache's own copies
	// do, without a copy of each for every reconcile.
	endpointSlices := &discoveryv1.EndpointSliceList{}
	if err := r.Client.List(ctx, endpointSlices, client.InNamespace(w.Namespace),
		client.MatchingFields{endpointSliceServiceIndex: w.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list EndpointSlices of Service: %w", err)
	}
	obs.routedPods = readyEndpointPods(endpointSlices.Items)
	return nil
}

// readyEndpointPods counts the distinct pods that the slices list as ready.
// A pod may appear in two slices while the EndpointSlice controller moves
// it; the API documents a missing ready condition as ready.
func readyEndpointPods(slices []discoveryv1.EndpointSlice) int32 {
	seen := map[string]bool{}
	for _, slice := range slices {
		for _, endpoint := range slice.Endpoints {
			if endpoint.Conditions.Ready != nil && !*endpoint.Conditions.Ready {
				continue
			}
			id := strings.Join(endpoint.Addresses, ",")
			if endpoint.TargetRef != nil {
				id = endpoint.TargetRef.Name
			}
			seen[id] = true
		}
	}
	return int32(len(seen))
}

func firstCause(causes ...*cause) *cause {
	for _, c := range causes {
		if c != nil {
			return c
		}
	}
	return nil
}
