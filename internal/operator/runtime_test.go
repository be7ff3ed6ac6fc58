package operator

import (
	"os"
	"runtime"
	"testing"
)

// The memory limit is the container's, read from its cgroup: a limit in
// bytes, none for "max" or v1's "unlimited" number, none without a cgroup
// file.
func TestContainerMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"cgroup v2 with a limit", map[string]string{cgroupMemoryMax: "268435456\n"}, 268435456, true},
		{"cgroup v2 without", map[string]string{cgroupMemoryMax: "max\n"}, 0, false},
		{"cgroup v1 with a limit", map[string]string{cgroupV1Limit: "134217728"}, 134217728, true},
		{"cgroup v1 without", map[string]string{cgroupV1Limit: "9223372036854771712"}, 0, false},
		{"no cgroup", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if data, ok := tc.files[name]; ok {
					return []byte(data), nil
				}
				return nil, os.ErrNotExist
			}
			got, ok := containerMemoryLimit(read)
			if got != tc.want || ok != tc.ok {
				t.Errorf("containerMemoryLimit = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
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
