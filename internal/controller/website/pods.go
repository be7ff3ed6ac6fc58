package website

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
)

// A Website's pods are not watched: what the status needs of them, a
// container that cannot start and why (an image that cannot be pulled, a
// crash loop), no Deployment condition says, but a rollout that makes no
// progress shows it. So the pods are read, from the API server, only when
// the Deployment's rollout is not complete and has made no progress for
// podCheckAfter, and then again at intervals that grow with the stall, up
// to podCheckMaxInterval. Unavailable replicas would not tell every stall:
// a new pod that crashes while the old one still serves leaves none. A
// watch would bring every pod's every change to the operator (its
// creation, scheduling, start and readiness), for thousands of pods that
// start as they should; a pod that recovers makes its Deployment progress,
// which the Deployment's watch brings.
//
// Other events reach a stalled Website too (an edit, its Service's
// endpoints): a reading of its pods serves every reconcile for
// podReadingReuse, so that a burst of them costs one LIST, not one each.
const (
	podCheckAfter       = 10 * time.Second
	podCheckMaxInterval = 5 * time.Minute
	podReadingReuse     = podCheckAfter / 2
	// maxPodReadings bounds the readings kept, for as many stalled
	// Websites; one that falls out is read again.
	maxPodReadings = 1024
)

// podCheck is when a reconcile reads the Website's pods.
type podCheck struct {
	// now is true when this reconcile reads them.
	now bool
	// after is when to look again, 0 for never: the rollout is complete,
	// or the Deployment controller has yet to act, which its watch brings.
	after time.Duration
}

// podCheckFor decides, from Deployment d as observed at now, whether the
// pods are read now and when next. Progress is the Deployment's Progressing
// condition's last update, which the Deployment controller moves whenever
// a replica is created, updated or becomes available.
func podCheckFor(d *appsv1.Deployment, now time.Time) podCheck {
	if d == nil || d.Status.ObservedGeneration < d.Generation || rolloutComplete(d.Status, ptr.Deref(d.Spec.Replicas, 1)) {
		return podCheck{}
	}
	lastProgress := d.CreationTimestamp.Time
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.LastUpdateTime.After(lastProgress) {
			lastProgress = c.LastUpdateTime.Time
		}
	}
	stalled := now.Sub(lastProgress)
	if stalled < podCheckAfter {
		return podCheck{after: podCheckAfter - stalled}
	}
	return podCheck{now: true, after: min(stalled, podCheckMaxInterval)}
}

// readPods lists w's pods from the API server, sorted by name so that the
// pod a message names does not change with the order of the list, unless
// they were read less than podReadingReuse ago. The API server answers
// from its watch cache (resourceVersion 0): a pod's state a moment old is
// as good here, and it spares etcd a read.
func (r *Reconciler) readPods(ctx context.Context, w *websitev1.Website) ([]corev1.Pod, error) {
	key := client.ObjectKeyFromObject(w)
	if reading, ok := r.podReadings.Get(key); ok {
		return reading.([]corev1.Pod), nil
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(w.Namespace), client.MatchingLabels(SelectorLabels(w)),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return nil, fmt.Errorf("list pods of Website: %w", err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	r.podReadings.Add(key, pods.Items, podReadingReuse)
	return pods.Items, nil
}
