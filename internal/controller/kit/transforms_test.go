package kit

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A cached pod keeps the operator's own annotations (what an instance
// manager reports) and drops every other one, and its spec.
func TestTrimPodKeepsOnlyTheOperatorsAnnotations(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "ns", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{
			"example.com/instance-report":                      `{"role":"primary"}`,
			"kubectl.kubernetes.io/last-applied-configuration": "{…}",
		}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "postgres", Image: "postgres:15"}}},
	}
	out, err := TrimPod(pod)
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := out.(*corev1.Pod)
	g.Expect(trimmed.Annotations).To(Equal(map[string]string{"example.com/instance-report": `{"role":"primary"}`}))
	g.Expect(trimmed.Labels).To(Equal(pod.Labels))
	g.Expect(trimmed.Spec).To(Equal(corev1.PodSpec{}))

	pod.Annotations = map[string]string{"other.io/x": "y"}
	out, _ = TrimPod(pod)
	g.Expect(out.(*corev1.Pod).Annotations).To(BeNil(), "no map for a pod without the operator's annotations")
}

// A cached pod keeps its phase and the reason for it, and nothing else of
// its status but its containers' waiting states: an evicted pod is over,
// though it has no deletionTimestamp.
func TestTrimPodKeepsThePhase(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-3", Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
			PodIP: "10.0.0.3", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	out, err := TrimPod(pod)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*corev1.Pod).Status).To(Equal(corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}))
}
