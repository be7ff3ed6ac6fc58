package plugin

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newFenceCommand(o *options, fence bool) *cobra.Command {
	var w waitFlags
	var allowPrimary bool
	cmd := &cobra.Command{
		Use:   "fence NAME INSTANCE",
		Short: "Stop an instance's PostgreSQL, keeping its pod and data",
		Long: `Fence an instance of a PostgresCluster (add it to spec.fencedInstances):
its PostgreSQL stops, its pod and claim stay, for inspection or a cold copy.
A fenced primary is not failed over: writes stop until it is unfenced, so
fencing the primary needs --allow-primary.`,
		Example: "  kubectl platform pg fence db db-3 --wait",
	}
	if !fence {
		cmd.Use, cmd.Short, cmd.Example = "unfence NAME INSTANCE", "Start a fenced instance's PostgreSQL again",
			"  kubectl platform pg unfence db db-3 --wait"
		cmd.Long = `Unfence an instance of a PostgresCluster (remove it from
spec.fencedInstances): its PostgreSQL starts again and catches up.`
	}
	cmd.Args = cobra.ExactArgs(2)
	cmd.ValidArgsFunction = o.completeNames(&v1alpha1.PostgresClusterList{})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.fence(cmd, args[0], args[1], fence, allowPrimary, w)
	}
	if fence {
		cmd.Flags().BoolVar(&allowPrimary, "allow-primary", false, "fence the primary too: writes stop")
		w.add(cmd, "the instance reports that it is fenced")
	} else {
		w.add(cmd, "the instance reports that it runs again")
	}
	return cmd
}

// fence changes spec.fencedInstances by a merge patch that carries the
// resourceVersion it was computed from: the list is replaced whole, so a
// concurrent change to it makes the API server refuse the patch (409)
// rather than be lost, and the change is computed again.
func (o *options) fence(cmd *cobra.Command, name, instance string, fence, allowPrimary bool, w waitFlags) error {
	ctx := cmd.Context()
	c, pg, err := o.getPostgresCluster(ctx, name)
	if err != nil {
		return err
	}
	if err := checkInstanceName(pg, instance); err != nil {
		return err
	}
	if fence && instance == pg.Status.CurrentPrimary && !allowPrimary {
		return fmt.Errorf("%s is the primary of %s: fencing it stops writes until it is unfenced "+
			"(no failover); switch over first, or pass --allow-primary", instance, name)
	}
	changed := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
			return err
		}
		var list []string
		if list, changed = fencedAfter(pg.Spec.FencedInstances, instance, fence); !changed {
			return nil
		}
		return mergePatch(ctx, c, pg, map[string]any{
			"metadata": map[string]any{"resourceVersion": pg.ResourceVersion},
			"spec":     map[string]any{"fencedInstances": list},
		})
	})
	verb := map[bool]string{true: "fence", false: "unfence"}[fence]
	if err != nil {
		return fmt.Errorf("%s %s: patch spec.fencedInstances of PostgresCluster %s/%s: %w", verb, instance, pg.Namespace, name, err)
	}
	if changed {
		fmt.Fprintf(o.streams.Out, "postgrescluster/%s: %sd %s\n", name, verb, instance)
	} else {
		fmt.Fprintf(o.streams.Out, "postgrescluster/%s: %s is already %sd\n", name, instance, verb)
	}
	if !w.wait {
		return nil
	}
	return waitFor(ctx, c, client.ObjectKeyFromObject(pg), pg, w.timeout, func() (bool, string) {
		i := slices.IndexFunc(pg.Status.Instances, func(s v1alpha1.PostgresInstanceStatus) bool { return s.Name == instance })
		if i < 0 {
			return false, instance + " to report"
		}
		s := pg.Status.Instances[i]
		if fence {
			return s.Fenced, instance + " to report that it is fenced"
		}
		return !s.Fenced && s.Ready, instance + " to report that it is ready again"
	})
}
