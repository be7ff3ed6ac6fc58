package plugin

import (
	"context"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/plugin/view"
)

func newBackupJobCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "backupjob",
		Aliases: []string{"bj"},
		Short:   "Runs and backups of a BackupJob",
	}
	cmd.AddCommand(newRunCommand(o), newListCommand(o), newPinCommand(o, true), newPinCommand(o, false))
	return cmd
}

func newRunCommand(o *options) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Start a run of a BackupJob now",
		Long: `Start a run of a BackupJob now, outside its schedule: sets spec.runNow to
the current time. The run obeys the BackupJob's concurrencyPolicy and does
not move its schedule.`,
		Example:           "  kubectl platform bj run db-nightly --wait",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&v1alpha1.BackupJobList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			bj := &v1alpha1.BackupJob{}
			c, err := o.getNamed(cmd.Context(), "BackupJob", args[0], bj)
			if err != nil {
				return err
			}
			return o.runNow(cmd.Context(), c, bj, w)
		},
	}
	w.add(cmd, "the run has finished")
	return cmd
}

// runNow sets spec.runNow to a new value, the time now, which starts one
// run; with --wait it waits for the run's backup to have a result. The
// run is the backup annotated with the runNow value.
func (o *options) runNow(ctx context.Context, c client.Client, bj *v1alpha1.BackupJob, w waitFlags) error {
	value := o.now().UTC().Format(time.RFC3339)
	if bj.Spec.RunNow == value {
		return fmt.Errorf("BackupJob %s was asked for a run this second already; ask again in a second", bj.Name)
	}
	if err := mergePatch(ctx, c, bj, map[string]any{"spec": map[string]any{"runNow": value}}); err != nil {
		return fmt.Errorf("set spec.runNow of BackupJob %s/%s: %w", bj.Namespace, bj.Name, err)
	}
	fmt.Fprintf(o.streams.Out, "backupjob/%s: run requested (spec.runNow=%s)\n", bj.Name, value)
	if !w.wait {
		return nil
	}
	var run *v1alpha1.Backup
	err := waitFor(ctx, c, client.ObjectKeyFromObject(bj), bj, w.timeout, func() (bool, string) {
		if bj.Status.LastRunNow != value {
			if c := meta.FindStatusCondition(bj.Status.Conditions, v1alpha1.BackupJobReadyCondition); c != nil && c.Status != "True" {
				return false, fmt.Sprintf("the run to start (Ready=%s, %s: %s)", c.Status, c.Reason, c.Message)
			}
			return false, "the operator to start the run"
		}
		if run = o.runAskedBy(ctx, c, bj, value); run == nil || run.Result == v1alpha1.BackupRunning {
			return false, "the run to finish"
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "backupjob/%s: run %s %s\n", bj.Name, run.Name, run.Result)
	if run.Result != v1alpha1.BackupSucceeded {
		return fmt.Errorf("run %s of BackupJob %s %s (kubectl platform bj list %s)", run.Name, bj.Name, run.Result, bj.Name)
	}
	return nil
}

// runNowAnnotation, on a run's backup, is the spec.runNow value that
// asked for it (the operator's backupjob.RunNowAnnotation, which a test
// holds equal): a run is found by it rather than by its time, which is
// the operator's clock, not this machine's.
const runNowAnnotation = "example.com/run-now"

// runAskedBy is bj's backup, as status lists it, of the run that the
// runNow value asked for; nil while there is none.
func (o *options) runAskedBy(ctx context.Context, c client.Client, bj *v1alpha1.BackupJob, value string) *v1alpha1.Backup {
	selector := client.MatchingLabels{v1alpha1.BackupJobLabel: bj.Name}
	var objs []client.Object
	var claims corev1.PersistentVolumeClaimList
	if c.List(ctx, &claims, client.InNamespace(bj.Namespace), selector) == nil {
		for i := range claims.Items {
			objs = append(objs, &claims.Items[i])
		}
	}
	var snaps snapshotv1.VolumeSnapshotList
	if c.List(ctx, &snaps, client.InNamespace(bj.Namespace), selector) == nil {
		for i := range snaps.Items {
			objs = append(objs, &snaps.Items[i])
		}
	}
	for _, obj := range objs {
		if obj.GetAnnotations()[runNowAnnotation] != value {
			continue
		}
		for i, b := range bj.Status.Backups {
			if b.Name == obj.GetName() {
				return &bj.Status.Backups[i]
			}
		}
	}
	return nil
}

func newListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "list NAME",
		Short: "A BackupJob's backups: result, age, size, pinned, verified",
		Long: `List a BackupJob's backups, newest first, as its status lists them, with
whether each is pinned (read from the backup itself) and the result of its
restore drill.`,
		Example:           "  kubectl platform bj list db-nightly",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&v1alpha1.BackupJobList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			bj := &v1alpha1.BackupJob{}
			c, err := o.getNamed(cmd.Context(), "BackupJob", args[0], bj)
			if err != nil {
				return err
			}
			pinned, err := pinnedBackups(cmd.Context(), c, bj)
			if err != nil {
				return err
			}
			view.BackupList(o.streams.Out, bj, pinned, o.now())
			return nil
		},
	}
}

// pinnedBackups reads the pin label of the BackupJob's backups, claims
// and, where the cluster serves them, VolumeSnapshots.
func pinnedBackups(ctx context.Context, c client.Client, bj *v1alpha1.BackupJob) (map[string]bool, error) {
	pinned := map[string]bool{}
	selector := client.MatchingLabels{v1alpha1.BackupJobLabel: bj.Name}
	var claims corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claims, client.InNamespace(bj.Namespace), selector); err != nil {
		return nil, fmt.Errorf("list the backup claims of BackupJob %s: %w", bj.Name, err)
	}
	for _, p := range claims.Items {
		pinned[p.Name] = p.Labels[v1alpha1.PinnedLabel] == "true"
	}
	var snaps snapshotv1.VolumeSnapshotList
	if err := c.List(ctx, &snaps, client.InNamespace(bj.Namespace), selector); meta.IsNoMatchError(err) {
		return pinned, nil
	} else if err != nil {
		return nil, fmt.Errorf("list the backup snapshots of BackupJob %s: %w", bj.Name, err)
	}
	for _, s := range snaps.Items {
		pinned[s.Name] = s.Labels[v1alpha1.PinnedLabel] == "true"
	}
	return pinned, nil
}
