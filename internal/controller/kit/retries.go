package kit

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Retries is the rate limiter of a controller whose reconciles can both fail
// and have a time to come back: a backup's next scheduled run, a token's
// renewal, a recheck of a conflict.
//
// controller-runtime drops the RequeueAfter of a reconcile that returns an
// error. It retries a failure after the rate limiter's backoff instead,
// which grows to 1000 s, and a terminal failure never: a BackupJob whose
// retention keeps failing would start its runs up to 17 minutes late, and
// one whose spec the API server refuses would never run again until it
// changed. A reconcile that ends with Result is retried no later than the
// time it asked to come back, and a failure that an early retry would only
// repeat (the API server refused what the spec builds) is retried at that
// time only.
type Retries struct {
	backoff workqueue.TypedRateLimiter[reconcile.Request]

	mu sync.Mutex
	// due holds, for a reconcile that failed, the plan for its retry until
	// the queue asks for it (When), right after the reconcile returned.
	due map[reconcile.Request]retryPlan
}

// retryPlan is when to retry a failed reconcile.
type retryPlan struct {
	// after is when the reconcile asked to come back, 0 for no time.
	after time.Duration
	// backoff is false for a failure that an early retry would only repeat.
	backoff bool
}

// NewRetries returns Retries with controller-runtime's backoff for the
// failures it retries: from 5 ms, doubling, up to 1000 s.
func NewRetries() *Retries {
	return &Retries{
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second),
		due:     map[reconcile.Request]retryPlan{},
	}
}

// Result is what a reconcile of req returns when it ends with err (nil for
// none), and asks to come back after after (0 for no time). retry is false
// when err is only a refusal of what the spec builds, which the same spec
// would meet again. A nil Retries (a reconciler not set up with a manager,
// in tests) plans nothing: the queue's own backoff retries the failure.
func (r *Retries) Result(req reconcile.Request, err error, retry bool, after time.Duration) (ctrl.Result, error) {
	switch {
	case err == nil:
		r.drop(req)
		return ctrl.Result{RequeueAfter: after}, nil
	case !retry && after <= 0:
		// Nothing would change before the spec does, and a change of the
		// spec brings the next reconcile.
		r.drop(req)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if r == nil {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	r.due[req] = retryPlan{after: max(after, 0), backoff: retry}
	r.mu.Unlock()
	return ctrl.Result{}, err
}

// When tells the queue when to retry req, which failed.
func (r *Retries) When(req reconcile.Request) time.Duration {
	r.mu.Lock()
	plan, planned := r.due[req]
	delete(r.due, req)
	r.mu.Unlock()
	switch {
	case !planned:
		// A failure returned without Result (a status write failed).
		return r.backoff.When(req)
	case !plan.backoff:
		return plan.after
	case plan.after > 0:
		return min(r.backoff.When(req), plan.after)
	}
	return r.backoff.When(req)
}

// Forget ends the backoff of req, which succeeded.
func (r *Retries) Forget(req reconcile.Request) {
	r.backoff.Forget(req)
	r.drop(req)
}

// NumRequeues tells how many times in a row req has failed and been retried
// with backoff.
func (r *Retries) NumRequeues(req reconcile.Request) int {
	return r.backoff.NumRequeues(req)
}

func (r *Retries) drop(req reconcile.Request) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.due, req)
	r.mu.Unlock()
}
