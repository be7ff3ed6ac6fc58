package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/plugin/view"
)

func newPostgresCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "postgres",
		Aliases: []string{"pg", "postgrescluster"},
		Short:   "Status and operations of a PostgresCluster",
	}
	cmd.AddCommand(newPostgresStatusCommand(o), newPromoteCommand(o), newSwitchoverCommand(o),
		newFenceCommand(o, true), newFenceCommand(o, false), newRestartCommand(o),
		newPostgresBackupCommand(o), newRestoreCommand(o), newPsqlCommand(o), newReportCommand(o), newHibernateCommand(o))
	return cmd
}

func newPostgresStatusCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Instances, roles, lag, timeline, backups and conditions",
		Long: `Show one screen on a PostgresCluster, from its status as the operator last
observed it: its phase and primary, each instance's role, readiness,
timeline, WAL position and lag, the BackupJobs that back it up, and its
conditions with their messages.`,
		Example:           "  kubectl platform pg status db -n shop",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, pg, err := o.getPostgresCluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			backups, err := backupJobsOf(cmd.Context(), c, pg)
			if err != nil {
				return err
			}
			view.PostgresStatus(o.streams.Out, pg, backups, o.now())
			return nil
		},
	}
}

// getPostgresCluster reads the named PostgresCluster of the namespace the
// flags say, with a client for what the command does next.
func (o *options) getPostgresCluster(ctx context.Context, name string) (client.Client, *v1alpha1.PostgresCluster, error) {
	pg := &v1alpha1.PostgresCluster{}
	c, err := o.getNamed(ctx, "PostgresCluster", name, pg)
	if err != nil {
		return nil, nil, err
	}
	return c, pg, nil
}

// backupJobsOf lists the BackupJobs whose source is pg.
func backupJobsOf(ctx context.Context, c client.Client, pg *v1alpha1.PostgresCluster) ([]v1alpha1.BackupJob, error) {
	var list v1alpha1.BackupJobList
	if err := c.List(ctx, &list, client.InNamespace(pg.Namespace)); err != nil {
		return nil, fmt.Errorf("list the BackupJobs of namespace %s: %w", pg.Namespace, err)
	}
	var of []v1alpha1.BackupJob
	for _, bj := range list.Items {
		if bj.Spec.Source.PostgresCluster == pg.Name {
			of = append(of, bj)
		}
	}
	return of, nil
}

// waitFlags are --wait and --timeout of a command whose effect takes the
// operator a moment.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+what)
	cmd.Flags().DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long --wait waits")
}

// postgresReady is true when pg's Ready condition is True for its current
// generation: a condition of an older one does not yet tell of the change
// just made.
func postgresReady(pg *v1alpha1.PostgresCluster) bool {
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= pg.Generation
}
