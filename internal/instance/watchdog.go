package instance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// The fencing watchdog. A primary's instance manager stops PostgreSQL
// before its lease lapses (keepLease), but a manager that is stopped rather
// than dead (SIGSTOP, a hang) stops nothing, while another instance takes
// the lease and promotes. So the manager runs a second process, the
// watchdog, and arms it with a deadline each time it renews the lease:
// when the deadline passes unrenewed, the watchdog stops PostgreSQL itself
// (immediate shutdown). The two meet through one small file.

// watchdogFile is the file, in the instance's socket directory (an emptyDir
// of the pod), through which the manager arms its watchdog.
const watchdogFile = "fence-watchdog"

// watchdogInterval is how often the watchdog reads its file.
const watchdogInterval = 100 * time.Millisecond

// watchdogSlack is how long after the manager should have fenced the
// watchdog does it in its stead: less than fenceMargin, so that it is done
// before the lease lapses, and more than the manager's own look takes.
const watchdogSlack = time.Second

// watchdogArming is what the manager last armed its watchdog with; zero
// when disarmed.
type watchdogArming struct {
	until time.Time
	pid   int
}

// armed is what the watchdog is armed with: stop the PostgreSQL server of
// process pid, started at start (in clock ticks since boot, which tells it
// from a later process of the same ID), once the monotonic clock passes
// deadline (nanoseconds of CLOCK_MONOTONIC, which both processes share).
type armed struct {
	deadline int64
	pid      int
	start    uint64
}

func (a armed) String() string {
	return fmt.Sprintf("%d %d %d\n", a.deadline, a.pid, a.start)
}

func parseArmed(data []byte) (armed, error) {
	var a armed
	if _, err := fmt.Sscanf(string(data), "%d %d %d\n", &a.deadline, &a.pid, &a.start); err != nil {
		return armed{}, fmt.Errorf("read the watchdog's file %q: %w", data, err)
	}
	return a, nil
}

// mustStop tells whether the watchdog must stop the server at now (of the
// monotonic clock), given the start time of the process now holding the
// armed ID (0 when none does): past the deadline, and the same process.
func (a armed) mustStop(now int64, startOfPID uint64) bool {
	return a.pid > 0 && now >= a.deadline && startOfPID != 0 && startOfPID == a.start
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds: the same clock in every
// process of the machine, and it never jumps.
func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("CLOCK_MONOTONIC: %v", err))
	}
	return ts.Nano()
}

// processStart is when process pid started, in clock ticks since boot
// (field 22 of /proc/PID/stat); 0 when it does not run.
func processStart(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state): field 22 is fields[19].
	if len(fields) < 20 || fields[0] == "Z" {
		return 0
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0
	}
	return start
}

// RunWatchdog is `platform-operator instance watchdog FILE`, which the
// instance manager starts: it stops the PostgreSQL server that FILE arms
// it for once the deadline in FILE passes, and ends when the manager that
// started it is gone or ctx ends.
func RunWatchdog(ctx context.Context, path string, log logr.Logger) error {
	parent := os.Getppid()
	ticker := time.NewTicker(watchdogInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if os.Getppid() != parent {
			return errors.New("the instance manager is gone")
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		a, err := parseArmed(data)
		if err != nil || !a.mustStop(monotonicNow(), processStart(a.pid)) {
			continue
		}
		log.Info("The primary's lease was not renewed in time by a live instance manager: stopping PostgreSQL", "pid", a.pid)
		if err := syscall.Kill(a.pid, syscall.SIGQUIT); err != nil && !errors.Is(err, syscall.ESRCH) {
			log.Error(err, "Stop PostgreSQL", "pid", a.pid)
		}
	}
}

// watchdog is the manager's side: the file it arms the watchdog with.
type watchdog struct {
	path string
	// mu serializes the writes, from the manager's loop and its renewals.
	mu sync.Mutex
}

// arm makes the watchdog stop the server of process pid once within has
// passed, unless armed again before.
func (w *watchdog) arm(within time.Duration, pid int) error {
	if w == nil || pid <= 0 {
		return nil
	}
	start := processStart(pid)
	if start == 0 {
		return fmt.Errorf("arm the watchdog: process %d does not run", pid)
	}
	return w.write(armed{deadline: monotonicNow() + int64(within), pid: pid, start: start}.String())
}

// disarm leaves the server alone: it is no primary's, or it stopped.
func (w *watchdog) disarm() error {
	if w == nil {
		return nil
	}
	return w.write("")
}

func (w *watchdog) write(content string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	tmp := w.path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("arm the watchdog: %w", err)
	}
	if err := os.Rename(tmp, w.path); err != nil {
		return fmt.Errorf("arm the watchdog: %w", err)
	}
	return nil
}

// startWatchdog starts the watchdog process with command (the binary and
// `instance watchdog`), disarmed, and returns the manager's side of it; it
// is killed when ctx ends.
func startWatchdog(ctx context.Context, command []string, socketDir string) (*watchdog, error) {
	w := &watchdog{path: filepath.Join(socketDir, watchdogFile)}
	if err := w.disarm(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	args := append(append([]string(nil), command[1:]...), w.path)
	cmd := exec.CommandContext(ctx, command[0], args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the fencing watchdog: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return w, nil
}
