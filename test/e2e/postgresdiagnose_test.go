package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/devenv"
)

// logPostgresState logs what a reader of a failed run needs to tell why a
// cluster did not come back: the PostgresCluster's status, its pods, and
// the end of each instance's log, since CI keeps nothing but the test's
// output.
func (e *environment) logPostgresState(t *testing.T, ns, cluster string, instanceLogLines int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	pg := &v1alpha1.PostgresCluster{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, pg); err != nil {
		fmt.Fprintf(&b, "PostgresCluster %s/%s: %v\n", ns, cluster, err)
	} else {
		st := pg.Status
		fmt.Fprintf(&b, "PostgresCluster %s/%s: phase %s, current primary %q, target %q, ready %s\n",
			ns, cluster, st.Phase, st.CurrentPrimary, st.TargetPrimary, st.ReadyInstances)
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, i := range st.Instances {
			fmt.Fprintf(&b, "  instance %+v\n", i)
		}
	}
	pods := &corev1.PodList{}
	if err := e.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: cluster}); err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	}
	for _, p := range pods.Items {
		ready := "unknown"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = string(c.Status)
			}
		}
		fmt.Fprintf(&b, "pod %s (uid %s): phase %s, ready %s, node %q, role %q, deleting %t, created %s\n",
			p.Name, p.UID, p.Status.Phase, ready, p.Spec.NodeName, p.Labels[v1alpha1.PostgresRoleLabel],
			p.DeletionTimestamp != nil, p.CreationTimestamp.Format(time.RFC3339))
	}
	t.Log(b.String())
	for _, p := range pods.Items {
		path := e.Cluster.PostgresLogPath(ns, p.Name)
		t.Logf("the end of %s's log (%s):\n%s", p.Name, path, devenv.TailFile(path, instanceLogLines))
	}
}
