package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/platform-operator/internal/localcluster"
)

// processesUsing lists the processes whose command line mentions dir: the
// components of a cluster whose state is in dir.
func processesUsing(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), dir) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " ")[:80])
		}
	}
	return found
}

// startCommand runs the built command with its state in a folder of the
// test's and returns once the cluster runs.
func startCommand(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	if os.Getenv(localcluster.BinDirEnv) == "" {
		t.Fatalf("%s is not set: run the tests with make test", localcluster.BinDirEnv)
	}
	binary := filepath.Join(t.TempDir(), "localcluster")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(binary, "-dir", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	running := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			if strings.Contains(scanner.Text(), "press Ctrl-C") {
				close(running)
			}
		}
	}()
	select {
	case <-running:
	case <-time.After(90 * time.Second):
		t.Fatal("the cluster did not start within 90s")
	}
	if len(processesUsing(dir)) == 0 {
		t.Fatal("no component found running")
	}
	return cmd, dir
}

func waitNoProcesses(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(processesUsing(dir)) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("processes left behind: %v", processesUsing(dir))
}

func TestCtrlCStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cmd, dir := startCommand(t)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after Ctrl-C: %v", err)
	}
	waitNoProcesses(t, dir)
}

// When the command dies without a chance to stop the cluster (SIGKILL, or a
// panic), the kernel ends the components it started.
func TestKilledCommandLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cmd, dir := startCommand(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoProcesses(t, dir)
}
