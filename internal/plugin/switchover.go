package plugin

import (
	"errors"
	"fmt"
	"slices"

	"example.com/platform-operator/api/v1alpha1"
)

// errAlreadyPrimary: the instance asked for is the primary already, so
// nothing is to be written.
var errAlreadyPrimary = errors.New("already the primary")

// switchoverTarget is the replica a switchover without a named instance
// goes to: a ready, streaming, unfenced replica, the least behind (then
// the first by name), so that the old primary's last WAL reaches it
// soonest and the fewest reads see old data.
func switchoverTarget(pg *v1alpha1.PostgresCluster) (string, error) {
	var best *v1alpha1.PostgresInstanceStatus
	for i := range pg.Status.Instances {
		in := &pg.Status.Instances[i]
		if promotable(pg, in) != nil {
			continue
		}
		if best == nil || in.LagBytes < best.LagBytes || (in.LagBytes == best.LagBytes && in.Name < best.Name) {
			best = in
		}
	}
	if best == nil {
		return "", fmt.Errorf("PostgresCluster %s has no ready, unfenced replica to switch over to (status.instances)", pg.Name)
	}
	return best.Name, nil
}

// checkPromotable says why instance cannot become pg's primary, or
// errAlreadyPrimary. The operator would refuse or wait in these cases too;
// saying so at once spares a person a switchover that hangs.
func checkPromotable(pg *v1alpha1.PostgresCluster, instance string) error {
	if pg.Spec.Hibernate {
		return fmt.Errorf("PostgresCluster %s hibernates (spec.hibernate): no instance runs", pg.Name)
	}
	if instance == pg.Status.CurrentPrimary {
		return fmt.Errorf("%s is %w of %s", instance, errAlreadyPrimary, pg.Name)
	}
	for i := range pg.Status.Instances {
		if in := &pg.Status.Instances[i]; in.Name == instance {
			return promotable(pg, in)
		}
	}
	return fmt.Errorf("PostgresCluster %s has no instance %s in its status", pg.Name, instance)
}

func promotable(pg *v1alpha1.PostgresCluster, in *v1alpha1.PostgresInstanceStatus) error {
	switch {
	case in.Name == pg.Status.CurrentPrimary:
		return fmt.Errorf("%s is %w", in.Name, errAlreadyPrimary)
	case in.Fenced || slices.Contains(pg.Spec.FencedInstances, in.Name):
		return fmt.Errorf("%s is fenced: unfence it first", in.Name)
	case in.Role != v1alpha1.PostgresReplicaRole:
		return fmt.Errorf("%s reports no replica role (%q): it is not running as a replica", in.Name, in.Role)
	case !in.Ready:
		return fmt.Errorf("%s is not ready: it does not stream from the primary", in.Name)
	}
	return nil
}
