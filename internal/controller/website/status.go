package website

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/kit"
)

// observation is what one reconcile saw of a Website's children, after it
// applied them. Status is computed from it alone.
type observation struct {
	// deployment is the Website's own Deployment, or nil when it is absent
	// or belongs to someone else.
	deployment *appsv1.Deployment
	// deploymentCurrent is true when deployment was applied from the
	// Website's current spec.
	deploymentCurrent bool
	// servicePresent and ingressPresent are true when the Website's own
	// Service and Ingress exist.
	servicePresent bool
	ingressPresent bool
	// pods are the Website's pods, of any version, sorted by name, when
	// podCheck read them.
	pods []corev1.Pod
	// podCheck says whether this reconcile read the pods, and when to come
	// back to read them.
	podCheck podCheck
	// routedPods is the number of pods the Service's EndpointSlices list as
	// ready: the pods a client of the Service reaches.
	routedPods int32
	// blocker, when set, is why the Website cannot serve whatever its pods
	// do: a child in the way, a spec the API server refused, or a write
	// that failed.
	blocker *cause
	// conflict is true when an object that is not the Website's is in the
	// way of a child.
	conflict bool
	// retry is false when every failure was a refusal of the spec, which
	// retrying cannot cure.
	retry bool
}

// kstatusReasons: every Degraded cause but ApplyFailed, which the operator
// retries, waits for a person to change the spec, the image, or what is in
// the way.
var kstatusReasons = kit.KStatusReasons{Stalled: []string{
	websitev1.DeploymentConflictReason, websitev1.ServiceConflictReason, websitev1.IngressConflictReason,
	websitev1.HostConflictReason, websitev1.InvalidSpecReason, websitev1.ImagePullFailedReason,
	websitev1.CrashLoopingReason, websitev1.ContainerConfigErrorReason, websitev1.PodsRejectedReason,
	websitev1.ProgressDeadlineExceededReason, websitev1.DeletionBlockedReason,
}}

// cause is a reason and a message for a condition.
type cause struct {
	reason  string
	message string
}

// computeStatus derives the status of w from what was observed. It reads the
// previous status only to keep the lastTransitionTime of conditions whose
// status did not change; now stamps the others.
func computeStatus(w *websitev1.Website, obs observation, clusterDomain string, now metav1.Time) websitev1.WebsiteStatus {
	desired := desiredReplicas(w)
	status := websitev1.WebsiteStatus{
		ObservedGeneration: w.Generation,
		Selector:           labels.SelectorFromSet(SelectorLabels(w)).String(),
		URL:                ServiceURL(w, clusterDomain),
	}
	if obs.ingressPresent && w.Spec.Ingress != nil && w.Spec.Ingress.Host != "" {
		status.URL = IngressURL(w)
	}
	if d := obs.deployment; d != nil {
		if hasTutorialSelector(w, d) {
			status.AdoptedFrom = websitev1.AdoptFromTutorial
		}
		status.Replicas = d.Status.Replicas
		status.ReadyReplicas = d.Status.ReadyReplicas
		status.UpdatedReplicas = d.Status.UpdatedReplicas
	}
	status.Ready = fmt.Sprintf("%d/%d", status.ReadyReplicas, desired)

	ready, progressing, degraded := conditionsFor(w, obs, desired)
	reconciling, stalled := kit.KStatusConditions(ready, degraded, kstatusReasons)
	status.Conditions = kit.MergeConditions(w.Status.Conditions, w.Generation, now, ready, progressing, degraded, reconciling, stalled)
	return status
}

// conditionsFor decides the three conditions as type → (status, cause).
func conditionsFor(w *websitev1.Website, obs observation, desired int32) (ready, progressing, degraded metav1.Condition) {
	ready = metav1.Condition{Type: websitev1.ReadyCondition}
	progressing = metav1.Condition{Type: websitev1.ProgressingCondition}
	degraded = metav1.Condition{Type: websitev1.DegradedCondition}

	if obs.blocker != nil {
		set(&ready, metav1.ConditionFalse, *obs.blocker)
		set(&degraded, metav1.ConditionTrue, *obs.blocker)
		set(&progressing, metav1.ConditionFalse, cause{websitev1.RolloutBlockedReason,
			"The rollout waits until the cause given by the Degraded condition is fixed"})
		return ready, progressing, degraded
	}

	rollout := rolloutOf(obs, desired)
	problem := podProblem(obs.pods)
	if problem == nil {
		problem = deploymentProblem(obs.deployment)
	}

	unrouted := routingGap(w, obs, desired)
	switch {
	case rollout.complete && unrouted != nil:
		set(&ready, metav1.ConditionFalse, *unrouted)
	case rollout.complete && desired == 0:
		set(&ready, metav1.ConditionTrue, cause{websitev1.ScaledToZeroReason,
			"spec.replicas is 0: no pod serves the site"})
	case rollout.complete:
		set(&ready, metav1.ConditionTrue, cause{websitev1.AvailableReason,
			fmt.Sprintf("%d of %d replicas available and routed by Service %s", rollout.available, desired, w.Name)})
	case problem != nil:
		set(&ready, metav1.ConditionFalse, *problem)
	default:
		set(&ready, metav1.ConditionFalse, cause{websitev1.RollingOutReason, rollout.message})
	}

	switch {
	case rollout.complete:
		set(&progressing, metav1.ConditionFalse, cause{websitev1.RolloutCompleteReason,
			fmt.Sprintf("Deployment %s runs generation %d of the Website", w.Name, w.Generation)})
	case problem != nil && problem.reason == websitev1.ProgressDeadlineExceededReason:
		set(&progressing, metav1.ConditionFalse, *problem)
	default:
		set(&progressing, metav1.ConditionTrue, cause{websitev1.RollingOutReason, rollout.message})
	}

	if problem != nil {
		set(&degraded, metav1.ConditionTrue, *problem)
	} else {
		set(&degraded, metav1.ConditionFalse, cause{websitev1.AsExpectedReason, "Nothing is wrong"})
	}
	return ready, progressing, degraded
}

// routingGap says why a Website whose rollout is complete is still not
// reachable as built: its Service or Ingress is missing, or the Service does
// not route to every available pod (its selector was changed, or the
// EndpointSlice controller has not caught up yet).
func routingGap(w *websitev1.Website, obs observation, desired int32) *cause {
	switch {
	case !obs.servicePresent:
		return &cause{websitev1.EndpointsNotReadyReason, fmt.Sprintf("Waiting for Service %s to be created", w.Name)}
	case w.Spec.Ingress != nil && !obs.ingressPresent:
		return &cause{websitev1.EndpointsNotReadyReason, fmt.Sprintf("Waiting for Ingress %s to be created", w.Name)}
	case obs.routedPods < desired:
		return &cause{websitev1.EndpointsNotReadyReason, fmt.Sprintf(
			"Service %s routes to %d of %d available pods", w.Name, obs.routedPods, desired)}
	}
	return nil
}

type rolloutState struct {
	complete  bool
	available int32
	message   string
}

// rolloutOf tells whether the Deployment runs the current spec with every
// desired replica available and no old pod left, as `kubectl rollout status`
// decides it.
func rolloutOf(obs observation, desired int32) rolloutState {
	d := obs.deployment
	if d == nil {
		return rolloutState{message: "Waiting for the Deployment to be created"}
	}
	if !obs.deploymentCurrent || d.Status.ObservedGeneration < d.Generation {
		return rolloutState{message: "Waiting for the Deployment controller to act on the current spec"}
	}
	s := d.Status
	state := rolloutState{
		available: s.AvailableReplicas,
		complete:  rolloutComplete(s, desired),
	}
	switch {
	case s.UpdatedReplicas < desired:
		state.message = fmt.Sprintf("%d of %d replicas run the current spec", s.UpdatedReplicas, desired)
	case s.Replicas > s.UpdatedReplicas:
		state.message = fmt.Sprintf("%d old replicas are being replaced", s.Replicas-s.UpdatedReplicas)
	default:
		state.message = fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, desired)
	}
	return state
}

// rolloutComplete tells whether every one of the desired replicas runs the
// current template and is available, and no old one is left.
func rolloutComplete(s appsv1.DeploymentStatus, desired int32) bool {
	return s.UpdatedReplicas == desired && s.Replicas == desired && s.AvailableReplicas == desired
}

// podProblem finds the first pod whose container cannot run and says why,
// in the words of the kubelet.
func podProblem(pods []corev1.Pod) *cause {
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			waiting := cs.State.Waiting
			if waiting == nil {
				continue
			}
			reason := waitingReason(waiting.Reason)
			if reason == "" {
				continue
			}
			detail := waiting.Reason
			if waiting.Message != "" {
				detail += ": " + waiting.Message
			}
			return &cause{reason, kit.TruncateMessage(fmt.Sprintf("Pod %s: %s", pod.Name, detail))}
		}
	}
	return nil
}

// waitingReason maps the kubelet's reasons for a waiting container to a
// Degraded reason, or "" when the wait is normal (ContainerCreating).
func waitingReason(kubeletReason string) string {
	switch kubeletReason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
		return websitev1.ImagePullFailedReason
	case "CrashLoopBackOff":
		return websitev1.CrashLoopingReason
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return websitev1.ContainerConfigErrorReason
	}
	return ""
}

// deploymentProblem reads the Deployment's own conditions for a rollout that
// cannot go on.
func deploymentProblem(d *appsv1.Deployment) *cause {
	if d == nil {
		return nil
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return &cause{websitev1.PodsRejectedReason, kit.TruncateMessage("Deployment cannot create pods: " + c.Message)}
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse &&
			c.Reason == "ProgressDeadlineExceeded":
			return &cause{websitev1.ProgressDeadlineExceededReason, kit.TruncateMessage(c.Message)}
		}
	}
	return nil
}

func set(c *metav1.Condition, status metav1.ConditionStatus, why cause) {
	c.Status = status
	c.Reason = why.reason
	c.Message = why.message
}

func desiredReplicas(w *websitev1.Website) int32 {
	return ptr.Deref(w.Spec.Replicas, 1)
}
