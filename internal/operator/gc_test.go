package operator

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	previous := debug.SetGCPercent(100)
	defer debug.SetGCPercent(previous)

	TuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC: the runtime's target is %d, want %d", got, defaultGCPercent)
	}

	// GOGC=200 as the runtime read it at start: left alone.
	debug.SetGCPercent(200)
	env := map[string]string{"GOGC": "200"}
	TuneGC(func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200: the runtime's target is %d, want 200", got)
	}
}
