package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a Website. Each is always present once the operator has
// seen the Website, so that `kubectl wait --for=condition=Ready` and
// dashboards never have to guess what a missing condition means.
const (
	// ReadyCondition is True when the Website serves its current spec: the
	// Deployment has rolled out the latest generation and every desired
	// replica is available, its Service routes to them (its EndpointSlices
	// list them as ready) and its Ingress exists when one is asked for.
	// Polarity: True is good.
	ReadyCondition = "Ready"

	// ProgressingCondition is True while a rollout is under way: pods of the
	// current spec are being created or are not yet available. It turns False
	// when the rollout completes or stalls. Polarity: True is normal and
	// temporary.
	ProgressingCondition = "Progressing"

	// DegradedCondition is True when something needs a person's attention:
	// the spec cannot work, a child is in the way, pods fail to start, or the
	// rollout passed its progress deadline. Its reason and message name the
	// cause. Polarity: True is bad.
	DegradedCondition = "Degraded"
)

// Reasons of the Ready condition.
const (
	// AvailableReason (Ready=True): every desired replica of the current spec
	// is available.
	AvailableReason = "Available"

	// ScaledToZeroReason (Ready=True): spec.replicas is 0, so the rollout is
	// complete although no pod serves the site.
	ScaledToZeroReason = "ScaledToZero"

	// RollingOutReason (Ready=False, Progressing=True): pods of the current
	// spec are being created or are not yet available.
	RollingOutReason = "RollingOut"

	// EndpointsNotReadyReason (Ready=False): the rollout is complete, but the
	// Website is not reachable as built yet: its Service or Ingress is
	// missing, or the Service's EndpointSlices list fewer ready pods than
	// spec.replicas. It lasts a moment after a rollout; if it lasts longer,
	// the Service's selector or the cluster's EndpointSlice controller is at
	// fault, and the message says which numbers disagree.
	EndpointsNotReadyReason = "EndpointsNotReady"
)

// Reasons of the Progressing condition.
const (
	// RolloutCompleteReason (Progressing=False): the Deployment runs the
	// current spec with every replica available.
	RolloutCompleteReason = "RolloutComplete"

	// RolloutBlockedReason (Progressing=False): the rollout cannot go on until
	// the cause given by Degraded is fixed.
	RolloutBlockedReason = "RolloutBlocked"
)

// Reasons of the Degraded condition; when Ready is False for the same cause,
// it carries the same reason.
const (
	// AsExpectedReason (Degraded=False): nothing is wrong.
	AsExpectedReason = "AsExpected"

	// DeploymentConflictReason, ServiceConflictReason and
	// IngressConflictReason (Degraded=True, Ready=False): an object of that
	// kind and the Website's name exists in its namespace but is not owned by
	// the Website. The operator leaves it untouched; rename the Website or
	// remove the object.
	DeploymentConflictReason = "DeploymentConflict"
	ServiceConflictReason    = "ServiceConflict"
	IngressConflictReason    = "IngressConflict"

	// HostConflictReason (Degraded=True, Ready=False): spec.ingress.host (an
	// empty one: the Ingress of every host) is served by a Website of
	// another namespace that claimed it first (was
	// created earlier; in the same second, the first by namespace and
	// name). The Website gets no Ingress, and one it had is deleted; the
	// message names the holder. It gets the host once the holder is deleted
	// or moves to another host. Websites of one namespace share a host.
	HostConflictReason = "HostConflict"

	// InvalidSpecReason (Degraded=True, Ready=False): the API server refused a
	// child built from the spec, for example a limit below its request, or
	// the operator refuses it, for example an Ingress of every host where
	// it runs with --allow-catch-all-ingress=false. The operator does not
	// retry until the spec changes.
	InvalidSpecReason = "InvalidSpec"

	// ApplyFailedReason (Degraded=True): the API server refused to create or
	// update a child for a reason that may pass, such as a missing RBAC rule
	// or a webhook that is down. The operator retries with backoff.
	ApplyFailedReason = "ApplyFailed"

	// ImagePullFailedReason (Degraded=True): pods cannot pull spec.image,
	// because it does not exist or the registry refuses it.
	ImagePullFailedReason = "ImagePullFailed"

	// CrashLoopingReason (Degraded=True): the container keeps exiting.
	CrashLoopingReason = "CrashLooping"

	// ContainerConfigErrorReason (Degraded=True): the container cannot be
	// created, for example because a ConfigMap or Secret named in env is
	// missing, or the image runs as root.
	ContainerConfigErrorReason = "ContainerConfigError"

	// PodsRejectedReason (Degraded=True): the Deployment cannot create pods,
	// for example because of a quota or the namespace's Pod Security level.
	PodsRejectedReason = "PodsRejected"

	// ProgressDeadlineExceededReason (Degraded=True): the rollout made no
	// progress within the Deployment's progress deadline.
	ProgressDeadlineExceededReason = "ProgressDeadlineExceeded"

	// DeletionBlockedReason (Degraded=True): the Website is being deleted,
	// but a finalizer of another controller keeps it, typically the
	// tutorial's kopf operator that no longer runs. The message names the
	// finalizer and how to release it.
	DeletionBlockedReason = "DeletionBlocked"
)

// GetConditions returns the status's conditions.
func (s *WebsiteStatus) GetConditions() []metav1.Condition { return s.Conditions }

// GetObservedGeneration returns the generation the status describes.
func (s *WebsiteStatus) GetObservedGeneration() int64 { return s.ObservedGeneration }
