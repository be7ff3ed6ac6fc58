package operator

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestTuneRuntimeSetsTheGCTargetUnlessGOGCIsSet(t *testing.T) {
	previous := debug.SetGCPercent(100)
	defer debug.SetGCPercent(previous)

	TuneRuntime(Options{}, func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC: the runtime's target is %d, want %d", got, defaultGCPercent)
	}

	// GOGC=200 as the runtime read it at start: left alone.
	debug.SetGCPercent(200)
	env := map[string]string{"GOGC": "200"}
	TuneRuntime(Options{}, func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200: the runtime's target is %d, want 200", got)
	}
}

func TestTuneRuntimeSamplesHeapProfilesOnlyWhenServed(t *testing.T) {
	previous := runtime.MemProfileRate
	defer func() { runtime.MemProfileRate = previous }()

	for _, tc := range []struct {
		name     string
		pprof    string
		godebug  string
		wantRate int
	}{
		{name: "profiles not served", pprof: "", wantRate: 0},
		{name: "profiles off by 0", pprof: "0", wantRate: 0},
		{name: "profiles served", pprof: "127.0.0.1:8082", wantRate: 4096},
		{name: "rate set by GODEBUG", pprof: "", godebug: "gctrace=1,memprofilerate=4096", wantRate: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.MemProfileRate = 4096 // as the runtime would have it at start
			env := map[string]string{"GODEBUG": tc.godebug}
			TuneRuntime(Options{PprofBindAddress: tc.pprof}, func(k string) string { return env[k] })
			if runtime.MemProfileRate != tc.wantRate {
				t.Errorf("MemProfileRate is %d, want %d", runtime.MemProfileRate, tc.wantRate)
			}
		})
	}
}
