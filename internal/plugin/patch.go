package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mergePatch sends a JSON merge patch of exactly the fields in patch, as
// field manager kubectl-platform: the fields it does not name are left as
// they are, whoever wrote them.
func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode the patch: %w", err)
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldManager))
}

// waitFor reads key into obj every second until done says it is done, or
// the timeout passes; done's string says what is awaited, for the error.
func waitFor(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object, timeout time.Duration,
	done func() (bool, string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); apierrors.IsNotFound(err) {
			// Being made again, as a deleted pod is.
			last = key.String() + " to exist"
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("read %s: %w", key, err)
		}
		ok, what := done()
		last = what
		return ok, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("gave up after %s waiting for %s", timeout, last)
	}
	return err
}
