// Package postgrestest runs real PostgreSQL instances for tests of package
// postgres and its users: it finds PostgreSQL 15, the OS user to run it as,
// and gives each instance its own directories, loopback address and port.
//
// Tests that use it are skipped in -short mode and fail, rather than skip,
// when PostgreSQL is missing: hack/postgres.sh installs it.
package postgrestest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"example.com/platform-operator/internal/instance/postgres"
)

// DefaultBinDir is where Debian's postgresql-15 package installs the
// server's programs.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// majorVersion is the PostgreSQL major version the tests are written for.
const majorVersion = "15"

// RunAs is the OS user PostgreSQL runs as when the tests run as root
// (initdb and postgres refuse root).
const RunAs = "postgres"

// stopTimeout bounds the shutdown of an instance at the end of a test.
const stopTimeout = 30 * time.Second

// logTailLines is how much of an instance's log a failed test shows.
const logTailLines = 40

// BinDirEnv names the variable that, when set, gives the directory of
// PostgreSQL's programs (make test sets it from hack/postgres.sh).
const BinDirEnv = "POSTGRES_BIN_DIR"

// BinDir returns the directory of PostgreSQL 15's programs: $POSTGRES_BIN_DIR,
// DefaultBinDir, or what pg_config on PATH says. It skips the test in -short
// mode and fails it when PostgreSQL 15 is missing.
func BinDir(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL servers: skipped in -short mode")
	}
	dir := os.Getenv(BinDirEnv)
	switch {
	case dir != "":
		// Set on purpose: no other place is looked at.
	case exists(filepath.Join(DefaultBinDir, "postgres")):
		dir = DefaultBinDir
	default:
		out, err := exec.Command("pg_config", "--bindir").Output()
		if err != nil {
			t.Fatalf("PostgreSQL %s not found (no %s, no %s/postgres, no pg_config on PATH): run hack/postgres.sh to install it", majorVersion, BinDirEnv, DefaultBinDir)
		}
		dir = strings.TrimSpace(string(out))
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		t.Fatalf("run %s/postgres --version: %v: run hack/postgres.sh to install PostgreSQL %s", dir, err, majorVersion)
	}
	// "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"
	fields := strings.Fields(string(out))
	if len(fields) < 3 || !strings.HasPrefix(fields[2], majorVersion+".") {
		t.Fatalf("%s/postgres is %q, not PostgreSQL %s: run hack/postgres.sh", dir, strings.TrimSpace(string(out)), majorVersion)
	}
	return dir
}

// Credential is the OS user to run PostgreSQL as: RunAs when the test runs
// as root, nil (the test's own user) otherwise.
func Credential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(RunAs)
	if err != nil {
		t.Fatalf("tests run as root and PostgreSQL refuses root, but user %q to run it as is missing: %v", RunAs, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		t.Fatalf("uid of %s: %v", RunAs, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		t.Fatalf("gid of %s: %v", RunAs, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// NewInstance returns an instance named name with its own directories
// under the test's temporary directory, its own loopback address (one of
// 127.0.0.0/8, at random, so that parallel tests and other programs do not
// collide) and a free port there. Its log goes to a file whose end a failed
// test prints. It is neither initialized nor started.
func NewInstance(t testing.TB, name string) *postgres.Instance {
	t.Helper()
	binDir := BinDir(t)
	cred := Credential(t)
	root := t.TempDir()
	// The instance's user must be able to reach its directories.
	for _, dir := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A socket path is limited to 107 bytes: a short directory of its own,
	// not under the test's name.
	socketDir, err := os.MkdirTemp("", "pgsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) })
	addr, port := freeAddress(t)
	logPath := filepath.Join(root, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logFile.Close()
		if t.Failed() {
			t.Logf("End of the log of %s (%s):\n%s", name, logPath, tail(logPath, logTailLines))
		}
	})
	return &postgres.Instance{
		Name:          name,
		BinDir:        binDir,
		DataDir:       filepath.Join(root, "data"),
		SocketDir:     socketDir,
		ListenAddress: addr,
		Port:          port,
		Credential:    cred,
		Output:        logFile,
		Log:           testr.NewWithInterface(t, testr.Options{Verbosity: 1}).WithValues("instance", name),
	}
}

// freeAddress picks a random loopback address and a port free on it.
func freeAddress(t testing.TB) (string, int) {
	t.Helper()
	for range 10 {
		addr := fmt.Sprintf("127.%d.%d.%d", rand.IntN(256), rand.IntN(256), 1+rand.IntN(254))
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return addr, port
	}
	t.Fatal("found no free port on a loopback address in 10 attempts")
	return "", 0
}

// Start starts the instance, waits until it accepts connections, and stops
// it at the end of the test (fast, then by SIGKILL if that times out).
func Start(ctx context.Context, t testing.TB, inst *postgres.Instance) *postgres.Process {
	t.Helper()
	p, err := inst.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { StopProcess(t, p) })
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// StopProcess stops postgres with a fast shutdown, or SIGKILL when that
// takes longer than stopTimeout; it does nothing if postgres has exited.
func StopProcess(t testing.TB, p *postgres.Process) {
	t.Helper()
	select {
	case <-p.Exited():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := p.Stop(ctx, postgres.StopFast); err != nil {
		t.Errorf("stop PostgreSQL: %v; killing it", err)
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
	}
}

// TCP is how a client reaches the instance over the network: its loopback
// address and port.
func TCP(inst *postgres.Instance, user, password, database string) postgres.ConnInfo {
	return postgres.ConnInfo{Host: inst.ListenAddress, Port: inst.Port, User: user, Password: password, DBName: database}
}

// PassFile writes a password file for conns in a directory the instance's
// user can read, and returns its path.
func PassFile(t testing.TB, inst *postgres.Instance, conns ...postgres.ConnInfo) string {
	t.Helper()
	path := filepath.Join(filepath.Dir(inst.DataDir), "pgpass")
	if err := inst.WritePassFile(path, conns...); err != nil {
		t.Fatal(err)
	}
	return path
}

// Eventually calls f every 100 ms until it returns nil, and fails the test
// with f's last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	const interval = 100 * time.Millisecond
	deadline := time.Now().Add(timeout)
	var err error
	for range int(timeout/interval) + 1 {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(interval)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Setting is the value of parameter name in a new session of inst.
func Setting(ctx context.Context, t testing.TB, inst *postgres.Instance, name string) string {
	t.Helper()
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
