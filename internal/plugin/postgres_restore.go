package plugin

import (
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

func newRestoreCommand(o *options) *cobra.Command {
	var toTime string
	var apply bool
	cmd := &cobra.Command{
		Use:   "restore NAME [NEW] --to-time TIME",
		Short: "A new cluster from NAME's archive as it was at a time",
		Long: `Write the manifest of a new PostgresCluster, NEW (NAME-YYYYMMDD-HHMMSS
unless given), restored from NAME's object store (spec.backup) to TIME:
spec.bootstrap.fromBackup with NAME's store and path and targetTime. The
rest of its spec is NAME's, but its primary, fences and hibernation; it
archives to a path of its own (NAMESPACE/NEW). Printed as YAML; --apply
creates it, with your credentials.

TIME is RFC 3339 to the second, not in the future, and not before NAME's
status.archiving.firstRecoverabilityPoint (its oldest base backup's end).
NAME is only read: it keeps running.`,
		Example: "  kubectl platform pg restore db --to-time 2026-12-07T14:02:00Z > new.yaml\n" +
			"  kubectl platform pg restore db db-old --to-time 2026-12-07T14:02:00Z --apply",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if toTime == "" {
				return fmt.Errorf("--to-time is required: the moment to restore to, such as %s",
					o.now().UTC().Add(-time.Hour).Truncate(time.Second).Format(time.RFC3339))
			}
			target, err := parseTargetTime(toTime, o.now())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, src, err := o.getPostgresCluster(ctx, args[0])
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			restored, warnings, err := restoreManifest(src, name, target)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				fmt.Fprintf(o.streams.ErrOut, "warning: %s\n", w)
			}
			if !apply {
				data, err := manifestYAML(restored)
				if err != nil {
					return err
				}
				_, err = o.streams.Out.Write(data)
				return err
			}
			if err := c.Create(ctx, restored, client.FieldOwner(FieldManager)); apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("PostgresCluster %s/%s exists already: name another (kubectl platform pg restore %s NEW --to-time ...)",
					restored.Namespace, restored.Name, src.Name)
			} else if err != nil {
				return fmt.Errorf("create PostgresCluster %s/%s: %w", restored.Namespace, restored.Name, err)
			}
			fmt.Fprintf(o.streams.Out, "postgrescluster/%s created: restoring %s's archive to %s\n",
				restored.Name, src.Name, target.Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&toTime, "to-time", "", "the moment to restore to, RFC 3339 (2026-12-07T14:02:00Z)")
	cmd.Flags().BoolVar(&apply, "apply", false, "create the new cluster instead of printing it")
	return cmd
}

// parseTargetTime reads --to-time: RFC 3339, whole seconds (as
// spec.bootstrap.fromBackup.targetTime keeps it), not after now.
func parseTargetTime(s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--to-time %q is not an RFC 3339 time, such as 2026-12-07T14:02:00Z or 2026-12-07T15:02:00+01:00", s)
	}
	if t.Nanosecond() != 0 {
		return time.Time{}, fmt.Errorf("--to-time %s has a fraction of a second: the recovery target is whole seconds (%s)",
			s, t.Truncate(time.Second).UTC().Format(time.RFC3339))
	}
	if t.After(now) {
		return time.Time{}, fmt.Errorf("--to-time %s is in the future (it is %s): nothing after now is archived",
			t.UTC().Format(time.RFC3339), now.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// clusterName is the rule PostgresCluster's admission applies to names.
var clusterName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// restoreManifest is the new PostgresCluster, name (src's name and the
// target's time when empty), restored from src's object store to target,
// and what the person should know about it. It is refused when src archives
// nothing, or target is before the earliest moment src's store can restore
// to.
func restoreManifest(src *v1alpha1.PostgresCluster, name string, target time.Time) (*v1alpha1.PostgresCluster, []string, error) {
	if src.Spec.Backup == nil {
		return nil, nil, fmt.Errorf("PostgresCluster %s/%s has no spec.backup: no WAL archive to replay to a time; "+
			"restore a whole backup with spec.bootstrap.fromBackup.backupJob instead", src.Namespace, src.Name)
	}
	var warnings []string
	archiving := src.Status.Archiving
	switch {
	case archiving != nil && archiving.FirstRecoverabilityPoint != nil:
		if first := archiving.FirstRecoverabilityPoint.Time; target.Before(first) {
			return nil, nil, fmt.Errorf("--to-time %s is before %s, the first recoverability point of %s "+
				"(status.archiving.firstRecoverabilityPoint, the end of its oldest base backup in the store): "+
				"nothing earlier can be restored", target.Format(time.RFC3339), first.UTC().Format(time.RFC3339), src.Name)
		}
	default:
		warnings = append(warnings, fmt.Sprintf("%s reports no base backup in its store (status.archiving.firstRecoverabilityPoint): "+
			"the restore needs one that ended at or before %s (a BackupJob with target objectStore makes them)",
			src.Name, target.Format(time.RFC3339)))
	}
	if archiving != nil && archiving.LastArchivedAt != nil && target.After(archiving.LastArchivedAt.Time) {
		warnings = append(warnings, fmt.Sprintf("%s is after the last WAL file %s reported archived (%s at %s): "+
			"commits since then reach the store within spec.backup.archiveTimeout",
			target.Format(time.RFC3339), src.Name, archiving.LastArchivedWAL, archiving.LastArchivedAt.UTC().Format(time.RFC3339)))
	}

	if name == "" {
		name = src.Name + "-" + target.Format("20060102-150405")
		if len(name) > 50 {
			return nil, nil, fmt.Errorf("%s is longer than a PostgresCluster's 50 characters: name the new cluster (kubectl platform pg restore %s NEW --to-time ...)", name, src.Name)
		}
	}
	if len(name) > 50 || !clusterName.MatchString(name) {
		return nil, nil, fmt.Errorf("%q cannot name a PostgresCluster: at most 50 characters of lower-case letters, digits and '-', starting with a letter", name)
	}
	if name == src.Name {
		return nil, nil, fmt.Errorf("the new cluster needs a name other than %s's", src.Name)
	}

	spec := src.Spec.DeepCopy()
	// What names src's instances, or stops them, is not the new cluster's.
	spec.Primary, spec.FencedInstances, spec.Hibernate = "", nil, false
	store := spec.Backup.ObjectStore.DeepCopy()
	store.Path = pgspec.StorePath(&src.Spec.Backup.ObjectStore, src.Namespace, src.Name)
	owner, database := src.Spec.Bootstrap.ApplicationOwner()
	spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{
		ObjectStore: store,
		TargetTime:  &metav1.Time{Time: target},
		Database:    database,
		Owner:       owner,
	}}
	// A path belongs to one cluster: the new one archives to its own,
	// NAMESPACE/NEW.
	spec.Backup.ObjectStore.Path = ""
	return &v1alpha1.PostgresCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PostgresCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: src.Namespace},
		Spec:       *spec,
	}, warnings, nil
}

// manifestYAML is obj as YAML for kubectl apply -f: no status, no
// creationTimestamp.
func manifestYAML(obj client.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", obj.GetName(), err)
	}
	delete(u, "status")
	if meta, ok := u["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(u)
}
