package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// startCPUProfiles takes, when -cpu-profile asks for it, CPU profiles of
// kube-apiserver and, when it runs, of the operator at once, over the first
// part of the phase, into the logs folder (named after phase): where each
// one's time goes, to be read with go tool pprof. The ceiling, the scripted
// client and the burst take them, so that kube-apiserver's profiles can be
// compared. The returned func waits for them.
func (e *env) startCPUProfiles(ctx context.Context, phase string) (wait func()) {
	if e.cfg.cpuProfile <= 0 {
		return func() {}
	}
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		e.logf("CPU profiles: %v", err)
		return func() {}
	}
	seconds := strconv.Itoa(max(1, int(e.cfg.cpuProfile.Seconds())))
	ctx, cancel := context.WithTimeout(ctx, e.cfg.cpuProfile+e.deadline)
	var wg sync.WaitGroup
	operatorRuns := e.op != nil && e.pprofAddr != ""
	if operatorRuns {
		// Not the process of an earlier phase, stopped since.
		exited, _ := e.op.Exited()
		operatorRuns = !exited
	}
	wg.Go(func() {
		if !operatorRuns {
			return
		}
		file := filepath.Join(e.logDir, "operator-cpu-"+phase+".pprof")
		if err := fetchToFile(ctx, "http://"+e.pprofAddr+"/debug/pprof/profile?seconds="+seconds, file); err != nil {
			e.logf("operator CPU profile: %v", err)
			return
		}
		e.logf("operator CPU profile (%s s of %s) saved in %s", seconds, phase, file)
	})
	wg.Go(func() {
		file := filepath.Join(e.logDir, "kube-apiserver-cpu-"+phase+".pprof")
		data, err := e.admin.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		if err != nil {
			e.logf("kube-apiserver CPU profile: %v", fmt.Errorf("%s: %w", file, err))
			return
		}
		e.logf("kube-apiserver CPU profile (%s s of %s) saved in %s", seconds, phase, file)
	})
	return func() {
		wg.Wait()
		cancel()
	}
}
