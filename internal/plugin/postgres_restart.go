package plugin

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

func newRestartCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "restart NAME [INSTANCE]",
		Short: "Restart a PostgresCluster's instances one by one, or one replica",
		Long: `Restart every instance of a PostgresCluster, one at a time: the operator
replaces the replicas' pods first, each once the others are ready, then
switches over to an updated replica and replaces the former primary's pod,
as for an update of the spec. It sets the annotation
kubectl.kubernetes.io/restartedAt on the cluster, as kubectl rollout restart
does on a workload; each new value is a new restart.

With INSTANCE, restart that replica alone: delete its pod, which the
operator makes again on the same claim, where PostgreSQL starts and catches
up. The primary is refused: deleting its pod would fail it over; switch
over first, or restart the whole cluster.`,
		Example:           "  kubectl platform pg restart db --wait\n  kubectl platform pg restart db db-2 --wait",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return o.rollingRestart(cmd, args[0], w)
			}
			return o.restart(cmd, args[0], args[1], w)
		},
	}
	w.add(cmd, "every instance restarted is ready (or the one instance's new pod)")
	return cmd
}

// rollingRestart asks the operator for a rolling restart of pg, and with
// --wait waits until every instance runs in a pod made after the request
// and the cluster is ready.
func (o *options) rollingRestart(cmd *cobra.Command, name string, w waitFlags) error {
	ctx := cmd.Context()
	c, pg, err := o.getPostgresCluster(ctx, name)
	if err != nil {
		return err
	}
	if pg.Spec.Hibernate {
		return fmt.Errorf("PostgresCluster %s hibernates: no instance runs", pg.Name)
	}
	at := o.now().UTC().Format(time.RFC3339Nano)
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.PostgresRestartedAtAnnotation: at}}}
	if err := mergePatch(ctx, c, pg, patch); err != nil {
		return fmt.Errorf("ask PostgresCluster %s/%s for a rolling restart: %w", pg.Namespace, pg.Name, err)
	}
	fmt.Fprintf(o.streams.Out, "postgrescluster/%s: rolling restart asked (%s=%s)\n", pg.Name, v1alpha1.PostgresRestartedAtAnnotation, at)
	if !w.wait {
		return nil
	}
	err = waitFor(ctx, c, client.ObjectKeyFromObject(pg), pg, w.timeout, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(pg.Namespace), client.MatchingLabels{v1alpha1.PostgresClusterLabel: pg.Name}); err != nil {
			return false, "the cluster's pods to be read: " + err.Error()
		}
		return restartDone(pg, pods.Items, at)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "every instance of %s restarted and ready; primary %s\n", pg.Name, pg.Status.CurrentPrimary)
	return nil
}

// restartDone tells whether the rolling restart asked at at is over: each
// of pg's instances runs in a pod made for it, ready, and pg is ready; or
// what it waits for.
func restartDone(pg *v1alpha1.PostgresCluster, pods []corev1.Pod, at string) (bool, string) {
	restarted := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Annotations[v1alpha1.PostgresRestartedAtAnnotation] == at && podReady(&p) {
			restarted[p.Name] = true
		}
	}
	for n := 1; n <= int(pg.Spec.Instances); n++ {
		instance := pgspec.InstanceName(pg.Name, n)
		if !restarted[instance] {
			return false, instance + " to run ready in a restarted pod"
		}
	}
	if !postgresReady(pg) {
		return false, "PostgresCluster " + pg.Name + " to be ready"
	}
	return true, ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkRestartable says why instance of pg is not a replica whose pod may
// be deleted.
func checkRestartable(pg *v1alpha1.PostgresCluster, instance string) error {
	if err := checkInstanceName(pg, instance); err != nil {
		return err
	}
	if instance == pg.Status.CurrentPrimary || instance == pg.Status.TargetPrimary {
		return fmt.Errorf("%s is the primary of %s: deleting its pod would fail it over; "+
			"switch over first (kubectl platform pg switchover %s)", instance, pg.Name, pg.Name)
	}
	if pg.Spec.Hibernate {
		return fmt.Errorf("PostgresCluster %s hibernates: no instance runs", pg.Name)
	}
	return nil
}

// restart deletes the replica's pod, on condition that it is the pod read
// (its UID), so that a pod the operator just made again is left alone.
func (o *options) restart(cmd *cobra.Command, name, instance string, w waitFlags) error {
	ctx := cmd.Context()
	c, pg, err := o.getPostgresCluster(ctx, name)
	if err != nil {
		return err
	}
	if err := checkRestartable(pg, instance); err != nil {
		return err
	}
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: pg.Namespace, Name: instance}
	if err := c.Get(ctx, key, pod); err != nil {
		return fmt.Errorf("read the pod of instance %s: %w", instance, err)
	}
	old := pod.UID
	if err := c.Delete(ctx, pod, client.Preconditions{UID: &old}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, instance, err)
	}
	fmt.Fprintf(o.streams.Out, "pod/%s deleted: the operator makes it again on its claim\n", instance)
	if !w.wait {
		return nil
	}
	// The new pod's own report, not the cluster's status, which may still
	// tell of the old pod for a moment.
	err = waitFor(ctx, c, key, pod, w.timeout, func() (bool, string) {
		var report v1alpha1.PostgresInstanceReport
		data, ok := pod.Annotations[v1alpha1.PostgresReportAnnotation]
		if pod.UID == old || !ok || json.Unmarshal([]byte(data), &report) != nil {
			return false, "the new pod of " + instance + " to report"
		}
		return report.Ready, instance + " to report ready in its new pod"
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "%s is ready again\n", instance)
	return nil
}
