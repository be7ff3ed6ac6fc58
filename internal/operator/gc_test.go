package operator

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	previous := debug.SetGCPercent(100)
	defer debug.SetGCPercent(previous)

	if got := TuneGC(func(string) string { return "" }); got != defaultGCPercent {
		t.Errorf("without GOGC: target %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC: the runtime's target is %d, want %d", got, defaultGCPercent)
	}

	// GOGC=200 as the runtime read it at start.
	debug.SetGCPercent(200)
	env := map[string]string{"GOGC": "200"}
	if got := TuneGC(func(k string) string { return env[k] }); got != 200 {
		t.Errorf("with GOGC=200: target %d, want 200, left alone", got)
	}
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200: the runtime's target is %d, want 200", got)
	}
}
