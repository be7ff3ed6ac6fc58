package kit

import (
	"errors"
	"testing"
)

func TestErrorsRetryUnlessEveryErrorRefusesTheSpec(t *testing.T) {
	var e Errors
	e.Add(nil, false)
	if e.Err != nil || e.Retry {
		t.Fatalf("after nil: %+v", e)
	}
	refused, failed := errors.New("refused"), errors.New("failed")
	e.Add(refused, true)
	if !errors.Is(e.Err, refused) || e.Retry {
		t.Fatalf("after a refusal: %+v, want no retry", e)
	}
	e.Add(failed, false)
	if !errors.Is(e.Err, refused) || !errors.Is(e.Err, failed) || !e.Retry {
		t.Fatalf("after a failure: %+v, want both errors and a retry", e)
	}
}
