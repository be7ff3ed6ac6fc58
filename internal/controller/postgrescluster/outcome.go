package postgrescluster

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
)

// outcome collects the errors of one reconcile and the first problem for
// status. retry is false when every error is a refusal of the spec.
type outcome struct {
	conflict bool
	// podsHeld: an object the pods would use conflicts, so no new pod is
	// made.
	podsHeld bool
	kit.Problems
}

// cause is a reason and message for a condition.
type cause = kit.Cause

// record turns what Ensure did to one child into the outcome.
func (o *outcome) record(res children.Result) {
	switch res.Action {
	case children.Conflict:
		o.conflict = true
		o.Report(v1alpha1.PostgresConflictReason, res.Message)
	case children.Invalid:
		o.Add(res.Err, true)
		o.Report(v1alpha1.PostgresInvalidSpecReason, res.Message)
	case children.Failed:
		o.Add(res.Err, false)
		if !errors.Is(res.Err, platform.ErrNotLeader) && !apierrors.IsConflict(res.Err) {
			o.Report(v1alpha1.PostgresApplyFailedReason, res.Message)
		}
	}
}
