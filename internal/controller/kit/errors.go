package kit

import "errors"

// Errors collects the errors of one reconcile, for Outcome's Err and
// SpecRefused. Retry is false while every error is a refusal of the spec,
// which retrying cannot cure: the kit then waits for the spec to change
// instead of backing off. Each kind's outcome embeds it.
type Errors struct {
	Err   error
	Retry bool
}

// Add joins err, a refusal of the spec when invalid.
func (e *Errors) Add(err error, invalid bool) {
	if err == nil {
		return
	}
	e.Err = errors.Join(e.Err, err)
	e.Retry = e.Retry || !invalid
}
