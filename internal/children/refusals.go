package children

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// refusalMemory is how long a desired state the API server refused as
// invalid is answered from memory. Within it, the reconciles that other
// events bring (a sibling child changed, a pod became ready) do not send
// the same refused object again; after it, one attempt shows whether the
// cluster has changed its mind (a validating policy was relaxed).
const refusalMemory = 10 * time.Minute

// maxRefusals bounds the memory of refused desired states.
const maxRefusals = 4096

// refusals remembers, per child, the desired state the API server refused
// as invalid, so that it is not written again until the owner's spec (and
// with it the desired state's hash) changes.
type refusals struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[refusalKey]refusal
}

type refusalKey struct {
	kind, namespace, name string
}

type refusal struct {
	hash   string
	at     time.Time
	result Result
}

func newRefusals(clk clock.PassiveClock) *refusals {
	return &refusals{clock: clk, entries: map[refusalKey]refusal{}}
}

func keyOf(in *intent) refusalKey {
	return refusalKey{kind: in.gvk.GroupKind().String(), namespace: in.key.Namespace, name: in.key.Name}
}

// lookup returns the refusal of exactly this desired state, if it is recent.
func (r *refusals) lookup(in *intent) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	entry, ok := r.entries[keyOf(in)]
	if !ok || entry.hash != in.hash || r.clock.Since(entry.at) >= refusalMemory {
		return Result{}, false
	}
	return entry.result, true
}

// remember records that the API server refused this desired state.
func (r *refusals) remember(in *intent, result Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) >= maxRefusals {
		// Refusals of deleted owners are never forgotten one by one;
		// starting afresh costs one more refused write per child.
		clear(r.entries)
	}
	r.entries[keyOf(in)] = refusal{hash: in.hash, at: r.clock.Now(), result: result}
}

// forget drops the child's refusal once a write of it succeeded.
func (r *refusals) forget(in *intent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, keyOf(in))
}
