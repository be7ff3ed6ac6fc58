package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// restart NAME asks the operator for a rolling restart with the
// annotation, a new value each time, keeping the cluster's other
// annotations; a hibernating cluster is refused.
func TestRollingRestartSetsTheAnnotation(t *testing.T) {
	pg := inShop(cluster(func(pg *v1alpha1.PostgresCluster) { pg.Annotations = map[string]string{"team": "shop"} }))
	out, c, err := run(t, []client.Object{pg}, "pg", "restart", "db")
	if err != nil || !strings.Contains(out, "rolling restart asked") {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	got := get(t, c, "db", &v1alpha1.PostgresCluster{}).Annotations
	if got[v1alpha1.PostgresRestartedAtAnnotation] != "2026-12-07T12:00:00Z" || got["team"] != "shop" {
		t.Errorf("annotations %v", got)
	}

	hibernating := inShop(cluster(func(pg *v1alpha1.PostgresCluster) { pg.Spec.Hibernate = true }))
	if _, _, err := run(t, []client.Object{hibernating}, "pg", "restart", "db"); err == nil || !strings.Contains(err.Error(), "hibernates") {
		t.Errorf("a hibernating cluster: %v", err)
	}
}

// The rolling restart is over when every instance runs ready in a pod made
// for it and the cluster is ready: not while a pod is of before, not ready,
// or being deleted.
func TestRestartDone(t *testing.T) {
	const at = "2026-12-07T12:00:00Z"
	pod := func(name, restartedAt string, ready bool, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.PostgresRestartedAtAnnotation: restartedAt}}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	ready := cluster(func(pg *v1alpha1.PostgresCluster) {
		pg.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PostgresReadyCondition, Status: metav1.ConditionTrue}}
	})
	tests := []struct {
		name    string
		pg      *v1alpha1.PostgresCluster
		pods    []corev1.Pod
		done    bool
		waiting string
	}{
		{"all restarted and ready", ready, []corev1.Pod{pod("db-1", at, true, false), pod("db-2", at, true, false), pod("db-3", at, true, false)}, true, ""},
		{"the primary of before", ready, []corev1.Pod{pod("db-1", "", true, false), pod("db-2", at, true, false), pod("db-3", at, true, false)}, false, "db-1"},
		{"a restarted pod not ready", ready, []corev1.Pod{pod("db-1", at, true, false), pod("db-2", at, false, false), pod("db-3", at, true, false)}, false, "db-2"},
		{"a pod being deleted", ready, []corev1.Pod{pod("db-1", at, true, false), pod("db-2", at, true, false), pod("db-3", at, true, true)}, false, "db-3"},
		{"an earlier restart's pod", ready, []corev1.Pod{pod("db-1", at, true, false), pod("db-2", "2026-12-06T12:00:00Z", true, false), pod("db-3", at, true, false)}, false, "db-2"},
		{"the cluster not ready yet", cluster(nil), []corev1.Pod{pod("db-1", at, true, false), pod("db-2", at, true, false), pod("db-3", at, true, false)}, false, "PostgresCluster db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, waiting := restartDone(tt.pg, tt.pods, at)
			if done != tt.done || !strings.Contains(waiting, tt.waiting) {
				t.Errorf("restartDone = %v, %q; want %v, waiting for %q", done, waiting, tt.done, tt.waiting)
			}
		})
	}
}
