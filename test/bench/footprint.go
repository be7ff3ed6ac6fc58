package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// saveHeapProfile fetches the operator's heap profile (after a garbage
// collection) from its opt-in --pprof-bind-address into the logs folder,
// and keeps the top of `go tool pprof -top` of it in the results.
func (e *env) saveHeapProfile(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	file := filepath.Join(e.logDir, "heap-after-burst.pprof")
	if err := fetchToFile(ctx, "http://"+e.pprofAddr+"/debug/pprof/heap?gc=1", file); err != nil {
		e.logf("heap profile: %v", err)
		return
	}
	e.res.Footprint.HeapProfile = filepath.Join(fmt.Sprintf("n%d", e.n), filepath.Base(file))
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=15", e.cfg.operator, file).Output()
	if err != nil {
		e.logf("heap profile saved in %s; go tool pprof: %v", file, err)
		return
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Time:") || strings.HasPrefix(line, "Type:") {
			continue
		}
		e.res.Footprint.HeapTop = append(e.res.Footprint.HeapTop, strings.Join(strings.Fields(line), " "))
	}
	e.logf("heap profile saved in %s", file)
}

func fetchToFile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
