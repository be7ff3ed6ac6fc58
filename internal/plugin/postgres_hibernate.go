package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newHibernateCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "hibernate NAME on|off",
		Short: "Delete every pod and keep the claims, or bring the cluster back",
		Long: `Hibernate a PostgresCluster (on: sets spec.hibernate, and the operator deletes
every pod and keeps every claim) or bring it back (off: with its data and
its primary).`,
		Example:           "  kubectl platform pg hibernate db on --wait\n  kubectl platform pg hibernate db off --wait",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			on, err := onOff(args[1])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, pg, err := o.getPostgresCluster(ctx, args[0])
			if err != nil {
				return err
			}
			// false is written, not removed: the field's default is false.
			if err := mergePatch(ctx, c, pg, map[string]any{"spec": map[string]any{"hibernate": on}}); err != nil {
				return fmt.Errorf("set spec.hibernate of PostgresCluster %s/%s: %w", pg.Namespace, pg.Name, err)
			}
			fmt.Fprintf(o.streams.Out, "postgrescluster/%s: hibernate %s\n", pg.Name, args[1])
			if !w.wait {
				return nil
			}
			return waitFor(ctx, c, client.ObjectKeyFromObject(pg), pg, w.timeout, func() (bool, string) {
				if on {
					return pg.Status.Phase == v1alpha1.PostgresHibernated && postgresReady(pg),
						fmt.Sprintf("phase Hibernated (phase %s)", pg.Status.Phase)
				}
				return pg.Status.Phase != v1alpha1.PostgresHibernated && postgresReady(pg),
					fmt.Sprintf("the cluster to be Ready (phase %s, %s instances ready)", pg.Status.Phase, pg.Status.ReadyInstances)
			})
		},
	}
	w.add(cmd, "the cluster hibernates, or serves again")
	return cmd
}

// onOff reads on or off.
func onOff(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("hibernate takes on or off, not %q", s)
}
