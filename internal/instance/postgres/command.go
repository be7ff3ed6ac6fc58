package postgres

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// outputLimit bounds what of a tool's messages an error carries.
const outputLimit = 16 << 10

// toolWaitDelay bounds how long a tool's output is read after it exits or
// is cancelled: a grandchild (pg_rewind's single-user postgres) could
// otherwise hold the pipe open.
const toolWaitDelay = 5 * time.Second

// childEnv is the whole environment of every child process: nothing of the
// caller's, so that PGHOST, PGPASSWORD or PGDATA set for someone else cannot
// redirect it; the C locale, so that initdb makes the same cluster
// everywhere and pg_controldata's output can be parsed.
func (i *Instance) childEnv(extra ...string) []string {
	return append([]string{
		"PATH=" + i.BinDir + ":/usr/local/bin:/usr/bin:/bin",
		"LC_ALL=C",
		"LANG=C",
	}, extra...)
}

// sysProcAttr runs a child as the instance's user, in its own process group
// (so that a cancelled tool is stopped with what it started), and stops it
// if this process dies, so that nothing outlives the instance manager.
func (i *Instance) sysProcAttr(deathSignal syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
	if i.Credential != nil {
		cred := *i.Credential
		attr.Credential = &cred
	}
	return attr
}

// runTool runs one of PostgreSQL's programs to completion and returns its
// standard output; on failure, the error carries the end of what it said
// (its standard error, or its output when that is empty), where the tools
// say why.
func (i *Instance) runTool(ctx context.Context, name string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, i.bin(name), args...)
	cmd.Env = i.childEnv(env...)
	// The tools resolve their own path and the instance's user may not be
	// able to enter the caller's working directory.
	cmd.Dir = "/"
	cmd.SysProcAttr = i.sysProcAttr(syscall.SIGKILL)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: outputLimit}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	i.Log.V(1).Info("Running a PostgreSQL tool", "tool", name, "args", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		said := stderr.String()
		if strings.TrimSpace(said) == "" {
			said = lastBytes(stdout.String(), outputLimit)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s: %w (%w)%s", name, ctx.Err(), err, outputSuffix(said))
		}
		return "", fmt.Errorf("%s: %w%s", name, err, outputSuffix(said))
	}
	return stdout.String(), nil
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func outputSuffix(out string) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return ""
	}
	return ": " + out
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.limit; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }
