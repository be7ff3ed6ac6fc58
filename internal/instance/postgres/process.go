package postgres

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultStopTimeout bounds Stop when its context has no deadline.
const DefaultStopTimeout = 2 * time.Minute

// readyPollInterval is how often WaitReady tries to connect.
const readyPollInterval = 100 * time.Millisecond

// outputWaitDelay bounds how long postgres's log is read after the
// postmaster exits: its backends, orphaned by a SIGKILL of the postmaster
// alone, could hold the pipe open.
const outputWaitDelay = 5 * time.Second

// StopMode is PostgreSQL's shutdown mode, each sent as its signal to the
// postmaster.
type StopMode int

const (
	// StopSmart (SIGTERM) waits for the clients to disconnect, then
	// checkpoints.
	StopSmart StopMode = iota
	// StopFast (SIGINT) disconnects the clients, then checkpoints: a clean
	// shutdown that does not wait for anyone.
	StopFast
	// StopImmediate (SIGQUIT) ends every process at once, without a
	// checkpoint: the next start does crash recovery.
	StopImmediate
)

func (m StopMode) signal() syscall.Signal {
	switch m {
	case StopSmart:
		return syscall.SIGTERM
	case StopFast:
		return syscall.SIGINT
	default:
		return syscall.SIGQUIT
	}
}

func (m StopMode) String() string {
	switch m {
	case StopSmart:
		return "smart"
	case StopFast:
		return "fast"
	case StopImmediate:
		return "immediate"
	default:
		return fmt.Sprintf("StopMode(%d)", int(m))
	}
}

// Process is a running postgres (the postmaster), a child of this process.
type Process struct {
	inst   *Instance
	cmd    *exec.Cmd
	exited chan struct{}
	fatal  *fatalRecorder

	mu      sync.Mutex
	waitErr error
}

// Start runs postgres on the data directory as a child process, not
// daemonized: the instance manager is PID 1 of its pod and must see
// postgres exit. Use the returned Process to wait for it, stop it or reload
// it. Start returns once the process runs; WaitReady tells when it accepts
// connections.
func (i *Instance) Start(ctx context.Context) (*Process, error) {
	if err := i.validate(); err != nil {
		return nil, err
	}
	if !i.Initialized() {
		return nil, fmt.Errorf("start PostgreSQL: data directory %s is not initialized", i.DataDir)
	}
	return i.start(ctx, i.DataDir)
}

// start runs postgres on dataDir; options are -c settings that override
// the configuration files (InitDB's socket-only start).
func (i *Instance) start(ctx context.Context, dataDir string, options ...string) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	if err := i.mkdirOwned(i.SocketDir); err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	args := []string{"-D", dataDir}
	for _, o := range options {
		args = append(args, "-c", o)
	}
	cmd := exec.Command(i.bin("postgres"), args...)
	cmd.Env = i.childEnv()
	cmd.Dir = "/"
	// SIGQUIT if this process dies: an immediate shutdown, in which the
	// postmaster still ends its backends, rather than orphans.
	cmd.SysProcAttr = i.sysProcAttr(syscall.SIGQUIT)
	cmd.WaitDelay = outputWaitDelay
	out := i.Output
	if out == nil {
		out = &lineLogger{log: i.Log.WithName("postgres")}
	}
	fatal := &fatalRecorder{out: out}
	cmd.Stdout = fatal
	cmd.Stderr = fatal
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	p := &Process{inst: i, cmd: cmd, exited: make(chan struct{}), fatal: fatal}
	log := i.Log.WithValues("pid", cmd.Process.Pid, "dataDir", dataDir)
	log.Info("Started PostgreSQL")
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		log.Info("PostgreSQL exited", "exit", exitDescription(err))
		close(p.exited)
	}()
	return p, nil
}

// LastFatal is the last FATAL or PANIC message postgres wrote, such as
// why it exited; "" for none.
func (p *Process) LastFatal() string { return p.fatal.lastFatal() }

// PID is the postmaster's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once postgres has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for postgres to exit and returns how it did: nil for status 0
// (a shutdown), an *exec.ExitError otherwise.
func (p *Process) Wait() error {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Stop shuts postgres down in the given mode and waits for it to exit, for
// at most the context's deadline (DefaultStopTimeout without one). When the
// time is up it returns an error and postgres may still run: the caller
// chooses whether to escalate (StopImmediate, then Kill). Stopping a
// postgres that has exited does nothing: Wait tells how it exited.
func (p *Process) Stop(ctx context.Context, mode StopMode) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStopTimeout)
		defer cancel()
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.inst.Log.Info("Stopping PostgreSQL", "pid", p.PID(), "mode", mode.String())
	if err := p.signal(mode.signal()); err != nil {
		return fmt.Errorf("stop PostgreSQL (%s): %w", mode, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop PostgreSQL (pid %d, %s shutdown): not exited: %w", p.PID(), mode, ctx.Err())
	}
}

// Kill ends postgres and every process below it with SIGKILL, as the end
// of its container would, and waits for the postmaster to exit and, for at
// most killWait, for the others to be gone: a backend busy with a query
// notices its postmaster's death only at its next wait, and meanwhile
// still writes to the data directory and holds the shared memory that
// makes the next start refuse to run.
func (p *Process) Kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	pid := p.PID()
	// A stopped postmaster forks no child between the listing and the kill.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill PostgreSQL (pid %d): stop it: %w", pid, err)
	}
	children := descendants(pid)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill PostgreSQL (pid %d): %w", pid, err)
	}
	if err := killAll(children); err != nil {
		return fmt.Errorf("kill PostgreSQL's processes (pid %d): %w", pid, err)
	}
	p.inst.Log.Info("Killed PostgreSQL", "pid", pid, "children", len(children))
	<-p.exited
	if !waitExited(children, killWait) {
		return fmt.Errorf("kill PostgreSQL (pid %d): its processes still run after %s", pid, killWait)
	}
	return nil
}

// killWait bounds how long Kill waits for the processes of a killed
// postmaster to be gone.
const killWait = 5 * time.Second

// Reload makes postgres read its configuration files again (SIGHUP):
// enough for every change ConfigurePrimary and ConfigureStandby report as
// ReloadNeeded.
func (p *Process) Reload() error {
	if err := p.signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload PostgreSQL: %w", err)
	}
	p.inst.Log.V(1).Info("Reloaded PostgreSQL", "pid", p.PID())
	return nil
}

func (p *Process) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("postgres (pid %d) has exited: %s", p.PID(), exitDescription(p.Wait()))
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to pid %d: %w", sig, p.PID(), err)
	}
	return nil
}

// WaitReady waits until postgres accepts connections on its socket, until
// it exits, or until the context ends. A standby accepts connections once
// its replay has reached a consistent state.
func (p *Process) WaitReady(ctx context.Context) error {
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = p.inst.ping(attempt)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("wait for PostgreSQL to accept connections: it exited (%s); last connection error: %w", exitDescription(p.Wait()), lastErr)
		case <-ctx.Done():
			return fmt.Errorf("wait for PostgreSQL to accept connections: %w; last connection error: %w", ctx.Err(), lastErr)
		case <-ticker.C:
		}
	}
}

// exitDescription says how a process ended, for logs and errors.
func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
