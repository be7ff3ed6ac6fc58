package plugin

import (
	"fmt"
	"slices"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// fencedAfter is spec.fencedInstances once instance is fenced (fence) or
// unfenced, and whether that changes it; the others' order is kept.
func fencedAfter(current []string, instance string, fence bool) ([]string, bool) {
	has := slices.Contains(current, instance)
	switch {
	case fence && has, !fence && !has:
		return current, false
	case fence:
		return append(slices.Clone(current), instance), true
	}
	return slices.DeleteFunc(slices.Clone(current), func(s string) bool { return s == instance }), true
}

// checkInstanceName says why instance is not an instance of pg (CLUSTER-N,
// N from 1 to spec.instances), as the API server's rule would, but naming
// the instances there are.
func checkInstanceName(pg *v1alpha1.PostgresCluster, instance string) error {
	if !pgspec.Wanted(pg, instance) {
		return fmt.Errorf("%s is not an instance of PostgresCluster %s: its instances are %s-1 to %s-%d",
			instance, pg.Name, pg.Name, pg.Name, pg.Spec.Instances)
	}
	return nil
}
