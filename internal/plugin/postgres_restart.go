package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newRestartCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "restart NAME INSTANCE",
		Short: "Restart a replica: its pod is deleted and made again on its claim",
		Long: `Restart a replica of a PostgresCluster: delete its pod, which the operator
makes again on the same claim, where PostgreSQL starts and catches up. The
primary is refused: deleting its pod would fail it over; switch over
first. The operator has no rolling restart of its own.`,
		Example:           "  kubectl platform pg restart db db-2 --wait",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.restart(cmd, args[0], args[1], w)
		},
	}
	w.add(cmd, "the instance's new pod is ready")
	return cmd
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
