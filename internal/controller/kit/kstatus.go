package kit

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two conditions of kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), the
// convention that Flux, Argo CD, kubectl wait and cli-utils read to tell
// whether an object reached its desired state: Reconciling=True means the
// controller is still working toward it (InProgress), Stalled=True that it
// cannot get there without a person (Failed). Both are "abnormal-true":
// False is the normal state.
const (
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"
)

// Reasons of the kstatus conditions when False.
const (
	// ReconciledReason: Reconciling=False, the object is Ready or stalled.
	ReconciledReason = "Reconciled"
	// NotStalledReason: Stalled=False.
	NotStalledReason = "NotStalled"
)

// KStatusReasons are what a kind's reasons mean to kstatus.
type KStatusReasons struct {
	// Stalled are the Degraded causes that no retry cures (a spec
	// refused, an object of someone else's in the way): with one of them
	// the object is Stalled.
	Stalled []string
}

// KStatusConditions derives the Reconciling and Stalled conditions from a
// kind's own Ready and Degraded: Stalled is True, with Degraded's reason
// and message, when Degraded is True for a stalled cause; otherwise
// Reconciling is True, with Ready's reason and message, while the object
// is not Ready (kstatus reads Ready=False as InProgress too). A Degraded cause that retries cure
// (a write that failed) leaves the object Reconciling, not Stalled: a Flux
// or Argo CD health check keeps waiting rather than fail.
func KStatusConditions(ready, degraded metav1.Condition, reasons KStatusReasons) (reconciling, stalled metav1.Condition) {
	reconciling = metav1.Condition{Type: ReconcilingCondition, Status: metav1.ConditionFalse, Reason: ReconciledReason, Message: ready.Message}
	stalled = metav1.Condition{Type: StalledCondition, Status: metav1.ConditionFalse, Reason: NotStalledReason, Message: "Nothing waits for a person"}
	switch {
	case degraded.Status == metav1.ConditionTrue && slices.Contains(reasons.Stalled, degraded.Reason):
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, degraded.Reason, degraded.Message
	case ready.Status != metav1.ConditionTrue:
		reconciling.Status, reconciling.Reason = metav1.ConditionTrue, ready.Reason
	}
	return reconciling, stalled
}
