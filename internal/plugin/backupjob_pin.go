package plugin

import (
	"fmt"
	"slices"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newPinCommand(o *options, pin bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pin NAME BACKUP",
		Short: "Keep a backup whatever the retention policy says",
		Long: `Pin a backup of a BackupJob: label its claim or VolumeSnapshot
example.com/pinned=true, which retention never deletes.`,
		Example: "  kubectl platform bj pin db-nightly db-nightly-1765000000",
	}
	if !pin {
		cmd.Use, cmd.Short, cmd.Example = "unpin NAME BACKUP", "Let retention delete a pinned backup again",
			"  kubectl platform bj unpin db-nightly db-nightly-1765000000"
		cmd.Long = `Unpin a backup of a BackupJob: remove its label example.com/pinned, so that
retention may delete it when no rule keeps it.`
	}
	cmd.Args = cobra.ExactArgs(2)
	cmd.ValidArgsFunction = o.completeNames(&v1alpha1.BackupJobList{})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		c, err := o.client()
		if err != nil {
			return err
		}
		ns, err := o.namespace()
		if err != nil {
			return err
		}
		bj := &v1alpha1.BackupJob{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, bj); err != nil {
			return fmt.Errorf("read BackupJob %s/%s: %w", ns, args[0], err)
		}
		backup, err := backupObject(bj, args[1])
		if err != nil {
			return err
		}
		key := client.ObjectKey{Namespace: ns, Name: args[1]}
		if err := c.Get(ctx, key, backup); err != nil {
			return fmt.Errorf("read backup %s of BackupJob %s: %w", args[1], bj.Name, err)
		}
		if backup.GetLabels()[v1alpha1.BackupJobLabel] != bj.Name {
			return fmt.Errorf("%s is not a backup of BackupJob %s (its label %s is %q)", args[1], bj.Name,
				v1alpha1.BackupJobLabel, backup.GetLabels()[v1alpha1.BackupJobLabel])
		}
		// null removes the label in a merge patch.
		var value any
		if pin {
			value = "true"
		}
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{v1alpha1.PinnedLabel: value}}}
		if err := mergePatch(ctx, c, backup, patch); err != nil {
			return fmt.Errorf("label backup %s: %w", args[1], err)
		}
		fmt.Fprintf(o.streams.Out, "backup %s of %s: %s\n", args[1], bj.Name, map[bool]string{true: "pinned", false: "unpinned"}[pin])
		return nil
	}
	return cmd
}

// backupObject is an empty object of the kind of bj's backup named name,
// as status lists it: a claim, a VolumeSnapshot, or the ConfigMap that
// records a base backup in an object store.
func backupObject(bj *v1alpha1.BackupJob, name string) (client.Object, error) {
	i := slices.IndexFunc(bj.Status.Backups, func(b v1alpha1.Backup) bool { return b.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("BackupJob %s lists no backup %s in its status (kubectl platform bj list %s)", bj.Name, name, bj.Name)
	}
	switch bj.Status.Backups[i].Kind {
	case v1alpha1.SnapshotBackup:
		return &snapshotv1.VolumeSnapshot{}, nil
	case v1alpha1.ObjectStoreBackup:
		return &corev1.ConfigMap{}, nil
	}
	return &corev1.PersistentVolumeClaim{}, nil
}
