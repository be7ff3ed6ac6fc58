package website

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodsAreReadOnlyWhenARolloutStalls(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	// Two replicas asked for.
	deployment := func(replicas, updated, available int32, sinceProgress time.Duration, age time.Duration) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 2, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: updated,
				AvailableReplicas: available},
		}
		if sinceProgress >= 0 {
			d.Status.Conditions = []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, LastUpdateTime: metav1.NewTime(now)},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(now.Add(-sinceProgress))},
			}
		}
		return d
	}
	behind := deployment(2, 1, 1, time.Hour, time.Hour)
	behind.Generation = 3
	const noCondition = -1
	cases := []struct {
		name       string
		deployment *appsv1.Deployment
		want       podCheck
	}{
		{"no Deployment yet", nil, podCheck{}},
		{"rolled out", deployment(2, 2, 2, time.Hour, time.Hour), podCheck{}},
		{"the Deployment controller has yet to act on the spec", behind, podCheck{}},
		{"progress 3 s ago: look when it has stalled for 10 s", deployment(2, 2, 1, 3*time.Second, time.Hour), podCheck{after: 7 * time.Second}},
		{"stalled for 10 s: read now, again in 10 s", deployment(2, 2, 1, 10*time.Second, time.Hour), podCheck{now: true, after: 10 * time.Second}},
		{"stalled for 90 s: read now, again in 90 s", deployment(2, 2, 0, 90*time.Second, time.Hour), podCheck{now: true, after: 90 * time.Second}},
		{"a new pod stalls while the old ones serve", deployment(3, 1, 2, time.Minute, time.Hour), podCheck{now: true, after: time.Minute}},
		{"stalled for an hour: read every 5 minutes", deployment(2, 2, 1, time.Hour, 2*time.Hour), podCheck{now: true, after: 5 * time.Minute}},
		{"no Progressing condition: stalled since its creation", deployment(2, 2, 1, noCondition, 4*time.Second), podCheck{after: 6 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := podCheckFor(c.deployment, now); got != c.want {
				t.Errorf("podCheckFor = %+v, want %+v", got, c.want)
			}
		})
	}
}
