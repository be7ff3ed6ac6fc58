package operator

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// The garbage collector keeps Go's default target (GOGC 100): on a machine
// shared with the control plane, every CPU-second the operator spends
// collecting is taken from the API server, and a lower target buys memory
// with collections of the same live heap (docs/performance.md has the
// figures). Memory stays bounded by a limit instead: 90 % of the
// container's memory limit, where the cgroup sets one and GOMEMLIMIT does
// not, so that the collector works harder only when memory runs short,
// with headroom for what the heap does not count.
const (
	memoryLimitShare = 0.9
	// cgroupMemoryMax is the cgroup v2 file of the container's limit;
	// cgroupV1Limit the v1 one.
	cgroupMemoryMax = "/sys/fs/cgroup/memory.max"
	cgroupV1Limit   = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// TuneRuntime sets the memory limit from the container's, unless
// GOMEMLIMIT is set, and turns off the sampling of allocations for heap
// profiles unless the profiles are served (--pprof-bind-address) or
// GODEBUG sets the sampling rate: Go samples allocations by default,
// whether or not anyone can read the profile, and keeps a table of call
// stacks for it.
func TuneRuntime(opts Options, getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		if limit, ok := containerMemoryLimit(os.ReadFile); ok {
			debug.SetMemoryLimit(int64(float64(limit) * memoryLimitShare))
		}
	}
	if !profilesServed(opts) && !strings.Contains(getenv("GODEBUG"), "memprofilerate=") {
		runtime.MemProfileRate = 0
	}
}

// containerMemoryLimit reads the memory limit of the process's cgroup; false
// when there is none (a process on a host, "max").
func containerMemoryLimit(readFile func(string) ([]byte, error)) (int64, bool) {
	for _, file := range []string{cgroupMemoryMax, cgroupV1Limit} {
		data, err := readFile(file)
		if err != nil {
			continue
		}
		text := strings.TrimSpace(string(data))
		limit, err := strconv.ParseInt(text, 10, 64)
		// cgroup v1 says "no limit" with a number near the largest int64.
		if err != nil || limit <= 0 || limit >= math.MaxInt64/2 {
			return 0, false
		}
		return limit, true
	}
	return 0, false
}

// profilesServed reports whether opts serve net/http/pprof.
func profilesServed(opts Options) bool {
	return opts.PprofBindAddress != "" && opts.PprofBindAddress != "0"
}
