package kit

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"example.com/platform-operator/internal/children"
)

// The cache holds one copy of each type for every controller, so the types
// that several kinds watch have one setting, here: each kind's Descriptor
// returns it for them.

// PodCache is the cache setting of the pods the operator manages that carry
// label, trimmed by TrimPod. The label keeps out the pods a kind does not
// watch: a Website's pods, one per replica and thousands in all, are read
// only when a rollout stalls (see package website), where a watch would send
// every one of their changes.
func PodCache(label string) children.CacheSetting {
	setting := children.CacheConfig("kit.TrimPod", TrimPod)
	carries, err := labels.NewRequirement(label, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("pod cache label %q: %v", label, err)) // a constant of the caller
	}
	setting.Label = setting.Label.Add(*carries)
	return setting
}

// ServiceCache is the cache setting of Services: those the operator
// manages, trimmed by TrimService.
func ServiceCache() children.CacheSetting {
	return children.CacheConfig("kit.TrimService", TrimService)
}

// ownAnnotationPrefix starts the annotations of the operator's own domain,
// the only ones a cached pod keeps: they carry what the operator's instance
// managers report of their pods.
const ownAnnotationPrefix = "example.com/"

// TrimPod is the cache transform for pods: it keeps only what the
// reconcilers read (identity, labels, owners, the operator's own
// annotations, deletion, the phase and its reason, and each container's
// waiting state), so that thousands of pods cost little memory. The phase
// tells a pod that is over (Failed or Succeeded: evicted under node
// pressure, stopped by a node's shutdown) without a deletionTimestamp: no
// one restarts a standalone pod, and its last annotations are stale.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// Tombstones of deleted objects pass through untouched.
		return obj, nil
	}
	trimmed := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: TrimmedMeta(pod.ObjectMeta)}
	trimmed.OwnerReferences = pod.OwnerReferences
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, ownAnnotationPrefix) {
			if trimmed.Annotations == nil {
				trimmed.Annotations = map[string]string{}
			}
			trimmed.Annotations[key] = value
		}
	}
	trimmed.Status.Phase, trimmed.Status.Reason = pod.Status.Phase, pod.Status.Reason
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting == nil {
			continue
		}
		trimmed.Status.ContainerStatuses = append(trimmed.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:  cs.Name,
			State: corev1.ContainerState{Waiting: cs.State.Waiting.DeepCopy()},
		})
	}
	return trimmed, nil
}

// TrimService is the cache transform for Services: it leaves out the spec
// (selector, ports, addresses), which only the comparison with the desired
// state reads (children.PartialCopy); the kinds' status needs only to know
// that a Service exists.
var TrimService = children.PartialCopy("spec", func(s *corev1.Service) {
	s.Spec = corev1.ServiceSpec{}
})

// TrimmedMeta keeps of an object's metadata what the cache and the
// reconcilers need of a type they only observe: identity, version, labels
// and deletion.
func TrimmedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Labels:            m.Labels,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

// NodeCache is the cache setting of Nodes, which no kind manages but a
// kind may read: whether one is cordoned for a drain. Every node is held,
// trimmed to its name and that.
func NodeCache() children.CacheSetting {
	return children.CacheSetting{ByObject: cache.ByObject{Transform: TrimNode}, TransformName: "kit.TrimNode"}
}

// TrimNode keeps of a Node its identity and whether it is unschedulable.
func TrimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{TypeMeta: node.TypeMeta, ObjectMeta: TrimmedMeta(node.ObjectMeta), Spec: corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable}}, nil
}
