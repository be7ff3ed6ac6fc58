package operator

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set:
// the heap may grow by a quarter of its live size between collections, not
// by all of it (Go's default, 100). Nearly all of the operator's live heap
// is its cache, which grows with the cluster, so the headroom does too. The
// price is CPU: more collections of the same live heap. In one benchmark
// burst of 1000 Websites and a restart (test/bench, one run each of the same
// binary, -scenarios burst,restart), 25 instead of 50 took the peak resident
// size from 70.9 to 63.9 MiB for 23% more of the operator's CPU in the burst
// (7.0 instead of 5.7 s), while every Website was Ready as soon (41.8 s);
// earlier, 50 instead of 100 had taken it from 101.5 to 86.0 MiB. Prometheus
// sets its own default (75, since 2.53) the same way. GOGC and GOMEMLIMIT,
// when set, decide as usual.
const defaultGCPercent = 25

// TuneRuntime sets the garbage collector's default target unless GOGC is
// set, and turns off the sampling of allocations for heap profiles unless
// the profiles are served (--pprof-bind-address) or GODEBUG sets the
// sampling rate. Go samples one allocation in 512 KiB by default, whether or
// not anyone can read the profile; its table of call stacks takes about
// 1.5 MiB of an operator's memory and each sample a stack walk.
func TuneRuntime(opts Options, getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if !profilesServed(opts) && !strings.Contains(getenv("GODEBUG"), "memprofilerate=") {
		runtime.MemProfileRate = 0
	}
}

// profilesServed reports whether opts serve net/http/pprof.
func profilesServed(opts Options) bool {
	return opts.PprofBindAddress != "" && opts.PprofBindAddress != "0"
}
