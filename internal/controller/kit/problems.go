package kit

// Cause is a reason and a message for a condition.
type Cause struct {
	Reason, Message string
}

// Problems collects the errors of one reconcile, as Errors does, and the
// first problem that status must report: each kind's outcome embeds it.
type Problems struct {
	Errors
	// Problem is the first problem reported, nil when there was none.
	Problem *Cause
}

// Report keeps the first problem of a reconcile: the one that status's
// Degraded (or Ready) condition names. Later ones are dropped.
func (p *Problems) Report(reason, message string) {
	if p.Problem == nil {
		p.Problem = &Cause{Reason: reason, Message: message}
	}
}
