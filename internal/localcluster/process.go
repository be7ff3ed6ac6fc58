package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// logTailLines is how many lines of a component's log an error carries.
const logTailLines = 15

// stopGracePeriod is how long a component may take to exit after SIGTERM
// before its process group is killed.
const stopGracePeriod = 10 * time.Second

// Process is a program run as a child in its own process group, so that
// stopping it stops whatever it started too, and killed by the kernel if
// its parent dies: a component of the cluster, or an operator that the
// development environment and the tests run next to it.
type Process struct {
	name    string
	path    string
	args    []string
	logPath string
	// Env is the environment of the next Start; nil means the caller's.
	Env []string
	// Dir is the working folder of the next Start; empty means the
	// caller's.
	Dir string
	// StopGrace is how long Stop waits after SIGTERM before it kills the
	// process group (default 10 s).
	StopGrace time.Duration

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current run ends
	exitErr  error
	stopping bool
}

// NewProcess returns a process that runs the program at path with args,
// named name in errors, its output appended to logPath. It does not start
// it.
func NewProcess(name, path, logPath string, args ...string) *Process {
	return &Process{name: name, path: path, args: args, logPath: logPath, StopGrace: stopGracePeriod}
}

// newProcess is a component of the cluster: the binary name in binDir, its
// log name.log in logDir.
func newProcess(name, binDir, logDir string, args ...string) *Process {
	return NewProcess(name, filepath.Join(binDir, name), filepath.Join(logDir, name+".log"), args...)
}

// Start runs the process. Its output goes to its log file, appended to
// across restarts.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.exited) {
		return fmt.Errorf("%s is already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.Env
	cmd.Dir = p.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: Ctrl-C in a terminal reaches the parent,
		// which stops the cluster in order, and stop can kill the group.
		Setpgid: true,
		// If the parent dies without stopping the cluster (a panic, SIGKILL),
		// the kernel kills the child: nothing is left behind.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	p.exitErr = nil
	p.stopping = false
	exited := p.exited
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Stop ends the process: SIGTERM to its group, then SIGKILL after
// StopGrace. It returns once the process has exited.
func (p *Process) Stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil || isClosed(exited) {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	p.mu.Unlock()

	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(p.StopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	// Anything the component started in its group goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Kill ends the process at once with SIGKILL, as a crash would.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil || isClosed(exited) {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	p.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// PID is the process ID of the current run, or 0.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the current run has ended, and the error of its
// exit (nil for status 0).
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !isClosed(p.exited) {
		return false, nil
	}
	return true, p.exitErr
}

// Done is closed when the current run ends; nil before the first Start.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// LogPath is where the process's output goes.
func (p *Process) LogPath() string { return p.logPath }

// unexpectedExit returns an error when the process has exited without being
// asked to, else nil.
func (p *Process) unexpectedExit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !isClosed(p.exited) || p.stopping {
		return nil
	}
	return p.exitError()
}

// exitError describes how the process ended, with the end of its log. The
// caller holds p.mu.
func (p *Process) exitError() error {
	how := "exited"
	if p.exitErr != nil {
		how = "exited with " + p.exitErr.Error()
	}
	return &ComponentError{Component: p.name, How: how, LogPath: p.logPath, LogTail: tail(p.logPath, logTailLines)}
}

// ComponentError says that a component of the cluster stopped on its own.
type ComponentError struct {
	Component string
	How       string
	LogPath   string
	LogTail   string
}

func (e *ComponentError) Error() string {
	return fmt.Sprintf("%s %s; read %s, which ends with:\n%s", e.Component, e.How, e.LogPath, e.LogTail)
}

// tail returns the last n lines of a file, indented, or a note when it
// cannot be read.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b bytes.Buffer
	for _, line := range lines {
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func isClosed(ch chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// firstUnexpectedExit is the error of the first process that exited on its
// own, or nil.
func firstUnexpectedExit(procs []*Process) error {
	for _, p := range procs {
		if err := p.unexpectedExit(); err != nil {
			return err
		}
	}
	return nil
}
