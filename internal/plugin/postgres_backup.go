package plugin

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"example.com/platform-operator/api/v1alpha1"
)

func newPostgresBackupCommand(o *options) *cobra.Command {
	var w waitFlags
	var backupJob string
	cmd := &cobra.Command{
		Use:   "backup NAME",
		Short: "Back a PostgresCluster up now, by a run of its BackupJob",
		Long: `Start a run now of the BackupJob whose source is the PostgresCluster (of
--backupjob when several are): sets the BackupJob's spec.runNow. A cluster
no BackupJob backs up needs one first: see docs/backupjob.md.`,
		Example:           "  kubectl platform pg backup db --wait",
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
			bj, err := chooseBackupJob(pg.Name, backups, backupJob)
			if err != nil {
				return err
			}
			return o.runNow(cmd.Context(), c, bj, w)
		},
	}
	cmd.Flags().StringVar(&backupJob, "backupjob", "", "the BackupJob to run, when several back the cluster up")
	w.add(cmd, "the run has finished")
	return cmd
}

// chooseBackupJob is the BackupJob of backups (those of the cluster) to
// run: the one named, or the only one.
func chooseBackupJob(cluster string, backups []v1alpha1.BackupJob, named string) (*v1alpha1.BackupJob, error) {
	var names []string
	for i := range backups {
		if backups[i].Name == named || (named == "" && len(backups) == 1) {
			return &backups[i], nil
		}
		names = append(names, backups[i].Name)
	}
	switch {
	case len(backups) == 0:
		return nil, fmt.Errorf("no BackupJob backs up PostgresCluster %s: create one with "+
			"spec.source.postgresCluster: %s (see docs/backupjob.md)", cluster, cluster)
	case named != "":
		return nil, fmt.Errorf("BackupJob %s does not back up PostgresCluster %s; these do: %s", named, cluster, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("several BackupJobs back up PostgresCluster %s (%s): name one with --backupjob", cluster, strings.Join(names, ", "))
}
