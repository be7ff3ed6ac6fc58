package operator

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// countedValue counts how often a log encoder reads it.
type countedValue struct{ reads *int }

func (v countedValue) String() string {
	*v.reads++
	return "website-1"
}

func TestLoggerEncodesAddedValuesOnlyForEntriesItWrites(t *testing.T) {
	var out bytes.Buffer
	reads := 0
	logger := NewLogger(Options{LogFormat: "json"}, &out).
		WithName("website").
		WithValues("object", countedValue{&reads}).
		WithValues("reconcileID", "r-1")

	logger.V(1).Info("detail nobody asked for")
	if reads != 0 || out.Len() != 0 {
		t.Fatalf("a logger that wrote nothing read its values %d times and wrote %q", reads, out.String())
	}

	logger.Info("Reconciled", "action", "created")
	if reads != 1 {
		t.Errorf("one entry written: the value was read %d times, want 1", reads)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, got %q", out.String())
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatalf("not a JSON line: %q: %v", lines[0], err)
	}
	want := map[string]any{"logger": "website", "msg": "Reconciled", "object": "website-1", "reconcileID": "r-1", "action": "created"}
	for key, value := range want {
		if entry[key] != value {
			t.Errorf("%s = %v, want %v (line %s)", key, entry[key], value, lines[0])
		}
	}
	if i, j := strings.Index(lines[0], `"object"`), strings.Index(lines[0], `"action"`); i < 0 || i > j {
		t.Errorf("the logger's values come before the entry's own: %s", lines[0])
	}

	// Values added after an entry was written still show in the next one.
	logger.WithValues("attempt", 2).Error(nil, "Failed")
	if !strings.Contains(out.String(), `"attempt":2`) || !strings.Contains(out.String(), `"reconcileID":"r-1"`) {
		t.Errorf("second entry lacks its values: %s", out.String())
	}
}
