package children

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusWriter writes the status of the operator's own resources, once per
// reconcile and only when it changed.
//
// "Changed" is decided against the cache, which may not yet show the
// operator's own last write: a status computed equal to a stale cached copy
// would then be skipped although the API server holds a newer, different
// one. The writer therefore also remembers a digest of the status it last
// wrote for each object and writes whenever the new status differs from
// either.
type StatusWriter struct {
	client client.Client

	mu   sync.Mutex
	last map[string]string
}

// NewStatusWriter returns a StatusWriter that writes with c.
func NewStatusWriter(c client.Client) *StatusWriter {
	return &StatusWriter{client: c, last: map[string]string{}}
}

// Patch writes newStatus, already set on updated (a copy of cached), to the
// status subresource, unless neither the cache nor this process's last write
// disagrees with it. It replaces the whole status (a JSON patch that adds
// /status), without a resourceVersion: the status describes what this
// reconcile observed, so it may replace any earlier one. A merge patch
// computed against the cached object would not do: when the cache still
// shows an older status equal to the new one, it comes out empty, and the
// status this process wrote in between would stay. It reports whether it
// wrote.
func (w *StatusWriter) Patch(ctx context.Context, cached, updated client.Object, cachedStatus, newStatus any) (bool, error) {
	data, err := json.Marshal(newStatus)
	if err != nil {
		return false, fmt.Errorf("encode status: %w", err)
	}
	digest := hashOf(data)
	key := string(cached.GetUID())

	w.mu.Lock()
	last, known := w.last[key]
	w.mu.Unlock()
	if equality.Semantic.DeepEqual(cachedStatus, newStatus) && (!known || last == digest) {
		return false, nil
	}

	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": json.RawMessage(data)}})
	if err != nil {
		return false, fmt.Errorf("encode status patch: %w", err)
	}
	if err := w.client.Status().Patch(ctx, updated, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			w.Forget(cached)
			return false, nil // deleted meanwhile: nothing left to report on
		}
		return false, fmt.Errorf("patch status: %w", err)
	}
	w.mu.Lock()
	if len(w.last) >= maxVerified {
		clear(w.last)
	}
	w.last[key] = digest
	w.mu.Unlock()
	return true, nil
}

// Forget drops what the writer remembers of obj, once it is gone.
func (w *StatusWriter) Forget(obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, string(obj.GetUID()))
}
