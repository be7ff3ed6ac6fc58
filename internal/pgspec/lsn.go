package pgspec

import (
	"cmp"
	"slices"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
)

// ParseLSN reads a WAL position an instance reported, "16/B374D848"; 0,
// before every position, when it is not one: a report that says nothing
// ranks an instance last, never fails a decision.
func ParseLSN(s string) uint64 {
	lsn, err := postgres.ParseLSN(s)
	if err != nil {
		return 0
	}
	return uint64(lsn)
}

// MostCaughtUp is the replica among candidates that has the most WAL: most
// received, then most replayed, then the lowest name, so that two
// reconciles of one observation choose alike. "" when there is none.
// Copies of a cluster are taken from it: it loses the least.
func MostCaughtUp(candidates []v1alpha1.PostgresInstanceStatus) string {
	if len(candidates) == 0 {
		return ""
	}
	best := slices.MinFunc(candidates, func(x, y v1alpha1.PostgresInstanceStatus) int {
		return cmp.Or(cmp.Compare(ParseLSN(y.ReceivedLSN), ParseLSN(x.ReceivedLSN)),
			cmp.Compare(ParseLSN(y.ReplayedLSN), ParseLSN(x.ReplayedLSN)), cmp.Compare(x.Name, y.Name))
	})
	return best.Name
}
