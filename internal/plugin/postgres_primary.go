package plugin

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newSwitchoverCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "switchover NAME [INSTANCE]",
		Short: "Hand the primary over to a replica, the least behind by default",
		Long: `Switch a PostgresCluster's primary over to INSTANCE, or to the ready replica
that is least behind: sets spec.primary. The primary stops cleanly once its
replicas received all its WAL, then the target is promoted; no committed
row is lost.`,
		Example:           "  kubectl platform pg switchover db --wait\n  kubectl platform pg switchover db db-3",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 2 {
				target = args[1]
			}
			return o.setPrimary(cmd, args[0], target, w)
		},
	}
	w.add(cmd, "the target is the primary and the cluster Ready")
	return cmd
}

func newPromoteCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "promote NAME INSTANCE",
		Short: "Make INSTANCE the primary (a switchover to it)",
		Long: `Make INSTANCE, a ready replica, the primary of a PostgresCluster: sets
spec.primary, as a switchover does. The operator has no other way to
promote: a failover needs no command.`,
		Example:           "  kubectl platform pg promote db db-2 --wait",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.setPrimary(cmd, args[0], args[1], w)
		},
	}
	w.add(cmd, "INSTANCE is the primary and the cluster Ready")
	return cmd
}

// setPrimary patches spec.primary to target (the best replica when
// empty), then waits for the operator to have handed over, if asked.
func (o *options) setPrimary(cmd *cobra.Command, name, target string, w waitFlags) error {
	ctx := cmd.Context()
	c, pg, err := o.getPostgresCluster(ctx, name)
	if err != nil {
		return err
	}
	if target == "" {
		if target, err = switchoverTarget(pg); err != nil {
			return err
		}
	}
	if err := checkPromotable(pg, target); errors.Is(err, errAlreadyPrimary) {
		fmt.Fprintf(o.streams.Out, "%s is already the primary of %s: nothing to do\n", target, name)
		return nil
	} else if err != nil {
		return err
	}
	if err := mergePatch(ctx, c, pg, map[string]any{"spec": map[string]any{"primary": target}}); err != nil {
		return fmt.Errorf("set spec.primary of PostgresCluster %s/%s to %s: %w", pg.Namespace, name, target, err)
	}
	fmt.Fprintf(o.streams.Out, "postgrescluster/%s: switching over from %s to %s\n", name, pg.Status.CurrentPrimary, target)
	if !w.wait {
		return nil
	}
	err = waitFor(ctx, c, client.ObjectKeyFromObject(pg), pg, w.timeout, func() (bool, string) {
		return pg.Status.CurrentPrimary == target && postgresReady(pg),
			fmt.Sprintf("%s to be the primary of a Ready cluster (primary %s, phase %s)", target, pg.Status.CurrentPrimary, pg.Status.Phase)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "postgrescluster/%s: %s is the primary\n", name, target)
	return nil
}
