package children

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusWriter writes the status of the operator's own resources, once per
// reconcile and only when it changed.
//
// "Changed" is decided against the cache, which may not yet show the
// operator's own last write: a status computed equal to a stale cached copy
// would then be skipped although the API server holds a newer, different
// one. The writer therefore also remembers, per object, a digest of the
// status it last wrote and the resourceVersion of the cached object it
// wrote over: a new status is written when it differs from the cache,
// unless it is the one last written and the cache has not moved since (it
// does not show that write yet, nor anything after it).
type StatusWriter struct {
	client client.Client
	clock  clock.PassiveClock
	// live reads from the API server, to tell a deletion from a resource
	// without a status (see PatchThrottled); the client when unset.
	live client.Reader

	// guard makes every write conditional on the resourceVersion it was
	// computed from (see Guarded).
	guard bool

	mu   sync.Mutex
	last map[string]lastStatus
}

// ErrStale is returned, wrapped, by a guarded writer when the object
// changed since the status was computed from it: compute it again from the
// current object.
var ErrStale = errors.New("the object changed since its status was computed")

// Guarded makes w write a status only over the resourceVersion of the
// cached object it was computed from, for kinds whose status holds
// decisions the next reconcile builds on (which instance of a database is
// its primary): a status computed from a stale copy could undo a newer
// decision. It returns w.
func (w *StatusWriter) Guarded() *StatusWriter {
	w.guard = true
	return w
}

// lastStatus is what the writer remembers of its last write to an object.
type lastStatus struct {
	digest string
	// summary is what the caller said makes a status urgent (see
	// PatchThrottled).
	summary string
	// over is the resourceVersion of the cached object written over.
	over string
	at   time.Time
}

// NewStatusWriter returns a StatusWriter that writes with c.
func NewStatusWriter(c client.Client) *StatusWriter {
	return NewStatusWriterWithClock(c, clock.RealClock{})
}

// NewStatusWriterWithClock returns a StatusWriter that writes with c and
// tells time with clk (the real clock when nil).
func NewStatusWriterWithClock(c client.Client, clk clock.PassiveClock) *StatusWriter {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &StatusWriter{client: c, clock: clk, last: map[string]lastStatus{}}
}

// Patch writes newStatus, already set on updated (a copy of cached), to the
// status subresource, unless it is already there (see StatusWriter). It
// replaces the whole status (a JSON patch that adds /status), without a
// resourceVersion: the status describes what this reconcile observed, so
// it may replace any earlier one. A merge patch computed against the cached
// object would not do: when the cache still shows an older status equal to
// the new one, it comes out empty, and the status this process wrote in
// between would stay. It reports whether it wrote.
func (w *StatusWriter) Patch(ctx context.Context, cached, updated client.Object, cachedStatus, newStatus any) (bool, error) {
	wrote, _, err := w.PatchThrottled(ctx, cached, updated, cachedStatus, newStatus, "", 0)
	return wrote, err
}

// PatchThrottled is Patch for statuses that report progress: a new status
// whose summary (the caller's digest of what makes a status urgent, such as
// the generation it describes and whether the resource is ready) equals
// that of the last write within interval of it is not written now: it
// returns the time left instead, for the caller to come back then. So a
// rollout that moves through several intermediate states in a moment costs
// one write for its start and one for its end, and the status shows every
// urgent change at once and any other within interval.
func (w *StatusWriter) PatchThrottled(ctx context.Context, cached, updated client.Object, cachedStatus, newStatus any,
	summary string, interval time.Duration) (wrote bool, retryAfter time.Duration, err error) {
	data, err := json.Marshal(newStatus)
	if err != nil {
		return false, 0, fmt.Errorf("encode status: %w", err)
	}
	digest := hashOf(data)
	key := string(cached.GetUID())

	w.mu.Lock()
	last, known := w.last[key]
	w.mu.Unlock()
	switch {
	case equality.Semantic.DeepEqual(cachedStatus, newStatus) && (!known || last.digest == digest):
		return false, 0, nil
	case known && last.digest == digest && last.over == cached.GetResourceVersion():
		// The cache lags behind this very write.
		return false, 0, nil
	case known && interval > 0 && last.summary == summary:
		if wait := interval - w.clock.Since(last.at); wait > 0 {
			return false, wait, nil
		}
	}

	ops := []map[string]any{{"op": "add", "path": "/status", "value": json.RawMessage(data)}}
	if w.guard {
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": cached.GetResourceVersion()}}, ops...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return false, 0, fmt.Errorf("encode status patch: %w", err)
	}
	if err := w.client.Status().Patch(ctx, updated, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if w.guard && (apierrors.IsConflict(err) || apierrors.IsInvalid(err) || strings.Contains(err.Error(), "testing value")) {
			return false, 0, fmt.Errorf("patch status: %w: %w", ErrStale, err)
		}
		if apierrors.IsNotFound(err) {
			// The object was deleted meanwhile, with nothing left to
			// report on; or it exists and its resource serves no status
			// (a CustomResourceDefinition replaced by one without the
			// subresource, such as the tutorial's), which must not freeze
			// the status unsaid.
			var reader client.Reader = w.client
			if w.live != nil {
				reader = w.live
			}
			current := cached.DeepCopyObject().(client.Object)
			if reader.Get(ctx, client.ObjectKeyFromObject(cached), current) == nil && current.GetUID() == cached.GetUID() {
				return false, 0, fmt.Errorf("patch status: the API server serves no status for %s: was its CustomResourceDefinition replaced by one without the status subresource? %w",
					cached.GetName(), err)
			}
			w.Forget(cached)
			return false, 0, nil
		}
		return false, 0, fmt.Errorf("patch status: %w", err)
	}
	w.mu.Lock()
	if len(w.last) >= maxVerified {
		clear(w.last)
	}
	w.last[key] = lastStatus{digest: digest, summary: summary, over: cached.GetResourceVersion(), at: w.clock.Now()}
	w.mu.Unlock()
	return true, 0, nil
}

// ReadingLiveFrom makes the writer read from r, the API server, to tell
// whether an object whose status patch was answered NotFound exists. It
// returns w.
func (w *StatusWriter) ReadingLiveFrom(r client.Reader) *StatusWriter {
	w.live = r
	return w
}

// Forget drops what the writer remembers of obj, once it is gone.
func (w *StatusWriter) Forget(obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, string(obj.GetUID()))
}

// ForgetDeleted makes the writer forget every object of obj's type that
// the informers report deleted: an object without a finalizer is gone by
// the time its reconcile finds it missing, with nothing left to Forget.
func (w *StatusWriter) ForgetDeleted(ctx context.Context, informers cache.Informers, obj client.Object) error {
	informer, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("informer of %T: %w", obj, err)
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(deleted any) {
		if tombstone, ok := deleted.(toolscache.DeletedFinalStateUnknown); ok {
			deleted = tombstone.Obj
		}
		if o, ok := deleted.(client.Object); ok {
			w.Forget(o)
		}
	}})
	if err != nil {
		return fmt.Errorf("watch the deletions of %T: %w", obj, err)
	}
	return nil
}
