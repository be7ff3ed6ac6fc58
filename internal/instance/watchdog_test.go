package instance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

func TestArmedMustStop(t *testing.T) {
	a := armed{deadline: 1000, pid: 42, start: 7}
	for _, tc := range []struct {
		name  string
		now   int64
		start uint64
		want  bool
	}{
		{"before the deadline", 999, 7, false},
		{"at the deadline, the same process", 1000, 7, true},
		{"past it, another process of the same ID", 2000, 8, false},
		{"past it, the process gone", 2000, 0, false},
	} {
		if got := a.mustStop(tc.now, tc.start); got != tc.want {
			t.Errorf("%s: mustStop = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (armed{}).mustStop(1<<62, 7) {
		t.Error("a disarmed watchdog stops nothing")
	}
	back, err := parseArmed([]byte(a.String()))
	if err != nil || back != a {
		t.Errorf("parseArmed(%q) = %+v, %v", a.String(), back, err)
	}
}

// The watchdog stops the armed process once its deadline passes, and not
// before; armed again in time, it waits again.
func TestWatchdogStopsTheArmedProcess(t *testing.T) {
	server := exec.Command("sleep", "60")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	t.Cleanup(func() { _ = server.Process.Kill() })

	w := &watchdog{path: filepath.Join(t.TempDir(), watchdogFile)}
	if err := w.arm(time.Second, server.Process.Pid); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = RunWatchdog(ctx, w.path, testr.New(t)) }()
	defer func() { cancel(); <-done }()

	// Armed again twice before each deadline: it must not stop it.
	for range 2 {
		time.Sleep(600 * time.Millisecond)
		if err := w.arm(time.Second, server.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the watchdog stopped a process whose deadline was renewed: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	// No more renewals: stopped within the deadline and a look.
	select {
	case <-exited:
	case <-time.After(time.Second + 5*watchdogInterval):
		t.Fatal("the watchdog did not stop the process once its deadline passed")
	}
	if state := server.ProcessState; state == nil || state.Success() {
		t.Errorf("the process ended by itself: %v", state)
	}
}

// Disarmed, it stops nothing.
func TestDisarmedWatchdogStopsNothing(t *testing.T) {
	server := exec.Command("sleep", "60")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	w := &watchdog{path: filepath.Join(t.TempDir(), watchdogFile)}
	if err := w.arm(0, server.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := w.disarm(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*watchdogInterval)
	defer cancel()
	_ = RunWatchdog(ctx, w.path, testr.New(t))
	if processStart(server.Process.Pid) == 0 {
		t.Fatal("a disarmed watchdog stopped the process")
	}
	if data, err := os.ReadFile(w.path); err != nil || len(data) != 0 {
		t.Errorf("the disarmed file holds %q (%v)", data, err)
	}
}
