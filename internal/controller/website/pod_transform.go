package website

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimPod is the cache transform for pods: it keeps only what the
// reconciler reads (identity, labels, deletion, and each container's
// waiting state), so that thousands of Website pods cost little memory.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// Tombstones of deleted objects pass through untouched.
		return obj, nil
	}
	trimmed := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			Labels:            pod.Labels,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
	}
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
