// Package kit is the reconcile skeleton that every kind's controller runs
// on, and the small tools around it. A kind writes only what is particular
// to it: Sync, which brings one object's children to its spec and says what
// its status must be, and, for a kind with work to do at deletion,
// Finalize. The Loop does the rest, the same way for every kind:
//
//	get the object (gone: forget it)
//	being deleted ─▶ Finalize ─▶ status, then the finalizer released when done
//	otherwise      ─▶ the kind's finalizer added or removed as its spec asks
//	               ─▶ Sync: children ensured, what was observed, the status
//	a write refused because this replica may have lost the lease ─▶ stand down
//	─▶ a Warning event when Degraded turns True or changes cause
//	─▶ the status patched once, only when it changed (throttled for progress)
//	─▶ readiness metrics ─▶ Retries: a failure comes back no later than asked
//
// Setup registers a Loop with the manager with the watches every kind
// needs: its own objects (spec, annotation and deletion changes, those with
// work pending first at start-up), its children at a higher priority, a
// rate limiter that keeps requested requeues, and a logger keyed by the
// object.
package kit
