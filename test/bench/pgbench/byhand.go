package pgbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/test/bench/benchkit"
)

// The hand-made servers: a primary and two streaming standbys, named as
// synchronous_standby_names lists them.
const (
	handPrimary  = "primary"
	handDatabase = "app"
	handAppUser  = "app"
	handReplUser = "repl"
)

var handStandbys = []string{"s1", "s2"}

// handInitDBFlags are the hand-made primary's initdb flags, besides
// --pgdata: those of internal/instance/postgres's InitDB, which a careful
// administrator would choose as well (checksums above all).
var handInitDBFlags = []string{"--username", "postgres", "--auth-local", "trust", "--auth-host", "scram-sha-256",
	"--data-checksums", "--encoding", "UTF8", "--locale", "C", "--no-instructions"}

// handConfiguration is what the primary's postgresql.conf gets, besides
// its port and socket folder; the standbys copy it with the data. Every
// other parameter keeps PostgreSQL's default.
var handConfiguration = []string{"listen_addresses = '127.0.0.1'"}

// Bounds of the hand-made servers' commands.
const (
	handCommandTimeout = 2 * time.Minute
	handStreamTimeout  = time.Minute
)

// handMade is the primary and standbys this program set up, in a
// temporary folder, on loopback ports, each run with pg_ctl.
type handMade struct {
	binDir, dir string
	cred        *syscall.Credential
	socketDir   string
	// logDir holds each server's log, written by pg_ctl as PostgreSQL's
	// user.
	logDir string
	// ports of the primary, then of each standby.
	ports    []int
	appPass  string
	replPass string
	logf     func(string, ...any)
	// started are the data folders of servers pg_ctl started.
	started []string
}

// startByHand makes the primary with initdb and the standbys with
// pg_basebackup -R, starts them, and sets synchronous_standby_names for
// synchronous standbys (0 or 1).
func startByHand(ctx context.Context, binDir string, synchronous int, logf func(string, ...any)) (*handMade, error) {
	cred, err := benchkit.PostgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-pgbench-byhand-")
	if err != nil {
		return nil, err
	}
	h := &handMade{binDir: binDir, dir: dir, cred: cred, socketDir: filepath.Join(dir, "sock"), logDir: filepath.Join(dir, "logs"), appPass: randomKey(12), replPass: randomKey(12), logf: logf}
	// PostgreSQL's user, when it is not this process's, must reach its
	// folders under this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		return h, err
	}
	for _, d := range []string{h.socketDir, h.logDir, h.dataDir(handPrimary), h.dataDir(handStandbys[0]), h.dataDir(handStandbys[1])} {
		// initdb and pg_basebackup fill an empty folder of their user's.
		if err := h.mkdirOwned(d); err != nil {
			return h, err
		}
	}
	if h.ports, err = benchkit.FreeLocalPorts(1 + len(handStandbys)); err != nil {
		return h, err
	}
	if err := h.makePrimary(ctx); err != nil {
		return h, err
	}
	for i, name := range handStandbys {
		if err := h.makeStandby(ctx, name, h.ports[1+i]); err != nil {
			return h, err
		}
	}
	if err := h.setSynchronous(ctx, synchronous); err != nil {
		return h, err
	}
	logf("by hand: primary on 127.0.0.1:%d, standbys %v on ports %v, in %s", h.ports[0], handStandbys, h.ports[1:], dir)
	return h, nil
}

func (h *handMade) dataDir(name string) string { return filepath.Join(h.dir, name) }

// makePrimary runs initdb, adds handConfiguration, starts the primary and
// makes the replication role, the application's role and its database.
func (h *handMade) makePrimary(ctx context.Context) error {
	data := h.dataDir(handPrimary)
	if err := h.command(ctx, nil, "initdb", append([]string{"--pgdata", data}, handInitDBFlags...)...); err != nil {
		return err
	}
	if err := h.writeServerCertificate(data); err != nil {
		return err
	}
	conf := append(handFileConfiguration(), "unix_socket_directories = '"+h.socketDir+"'", fmt.Sprintf("port = %d", h.ports[0]))
	if err := appendLines(filepath.Join(data, "postgresql.conf"), conf); err != nil {
		return err
	}
	if err := h.start(ctx, handPrimary); err != nil {
		return err
	}
	return h.exec(ctx,
		// initdb's pg_hba.conf lets every role replicate from 127.0.0.1
		// with its password.
		fmt.Sprintf("CREATE ROLE %s WITH REPLICATION LOGIN PASSWORD '%s'", handReplUser, h.replPass),
		fmt.Sprintf("CREATE ROLE %s WITH LOGIN PASSWORD '%s'", handAppUser, h.appPass),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", handDatabase, handAppUser))
}

// makeStandby clones the primary with pg_basebackup -R, which writes
// primary_conninfo (with application_name, which
// synchronous_standby_names matches) and standby.signal, and starts it on
// its own port.
func (h *handMade) makeStandby(ctx context.Context, name string, port int) error {
	data := h.dataDir(name)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s", h.ports[0], handReplUser, name)
	if err := h.command(ctx, []string{"PGPASSWORD=" + h.replPass}, "pg_basebackup",
		"--pgdata", data, "--write-recovery-conf", "--wal-method=stream", "--checkpoint=fast", "--dbname", conninfo); err != nil {
		return err
	}
	if err := appendLines(filepath.Join(data, "postgresql.conf"), []string{fmt.Sprintf("port = %d", port)}); err != nil {
		return err
	}
	return h.start(ctx, name)
}

// start starts a server with pg_ctl, its log in the temporary folder.
func (h *handMade) start(ctx context.Context, name string) error {
	data := h.dataDir(name)
	log := filepath.Join(h.logDir, name+".log")
	if err := h.command(ctx, nil, "pg_ctl", "--pgdata", data, "--log", log, "--wait", "--timeout", "120", "start"); err != nil {
		return fmt.Errorf("%w; see %s", err, log)
	}
	h.started = append(h.started, data)
	return nil
}

// setSynchronous sets synchronous_standby_names with ALTER SYSTEM, as an
// administrator would, reloads, and waits until the primary reports each
// standby streaming as it should: quorum for 1, async for 0.
func (h *handMade) setSynchronous(ctx context.Context, synchronous int) error {
	names := ""
	want := "async"
	if synchronous > 0 {
		names = fmt.Sprintf("ANY %d (%s, %s)", synchronous, handStandbys[0], handStandbys[1])
		want = "quorum"
	}
	if err := h.exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names), "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	deadline := time.Now().Add(handStreamTimeout)
	for {
		n, err := h.streaming(ctx, want)
		if err == nil && n == len(handStandbys) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("by hand: %d of %d standbys streaming with sync_state %s within %s (%v)", n, len(handStandbys), want, handStreamTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// streaming counts the standbys that stream with the given sync_state.
func (h *handMade) streaming(ctx context.Context, syncState string) (int, error) {
	conn, err := postgres.Connect(ctx, h.superuser())
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1 AND application_name = ANY($2)",
		syncState, handStandbys).Scan(&n)
	return n, err
}

// exec runs statements on the primary as the superuser, over its socket.
func (h *handMade) exec(ctx context.Context, statements ...string) error {
	ctx, cancel := context.WithTimeout(ctx, handCommandTimeout)
	defer cancel()
	conn, err := postgres.Connect(ctx, h.superuser())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("by hand: %s: %w", s, err)
		}
	}
	return nil
}

func (h *handMade) superuser() postgres.ConnInfo {
	return postgres.ConnInfo{Host: h.socketDir, Port: h.ports[0], User: "postgres", DBName: "postgres"}
}

// app is how pgbench reaches the primary: over TCP on loopback, as the
// application's role, with its password.
func (h *handMade) app() server {
	return server{name: "hand-made primary (127.0.0.1)",
		info: postgres.ConnInfo{Host: "127.0.0.1", Port: h.ports[0], User: handAppUser, Password: h.appPass, DBName: handDatabase}}
}

// close stops the servers, the primary first (a fast shutdown sends its
// last WAL to the standbys), and removes the temporary folder.
func (h *handMade) close() error {
	var errs []error
	for _, data := range h.started {
		ctx, cancel := context.WithTimeout(context.Background(), handCommandTimeout)
		if err := h.command(ctx, nil, "pg_ctl", "--pgdata", data, "--mode", "fast", "--wait", "--timeout", "60", "stop"); err != nil {
			errs = append(errs, err, h.command(ctx, nil, "pg_ctl", "--pgdata", data, "--mode", "immediate", "stop"))
		}
		cancel()
	}
	h.started = nil
	if err := os.RemoveAll(h.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// command runs one of PostgreSQL's programs as PostgreSQL's user, with
// extra environment, and fails with its output.
func (h *handMade) command(ctx context.Context, env []string, program string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, handCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(h.binDir, program), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = h.dir
	if h.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: h.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("by hand: %s: %w: %s", program, err, lastLines(string(out), 5))
	}
	return nil
}

// mkdirOwned makes a folder PostgreSQL's user owns, private to it.
func (h *handMade) mkdirOwned(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	if h.cred == nil {
		return nil
	}
	return os.Chown(path, int(h.cred.Uid), int(h.cred.Gid))
}

// appendLines adds lines to a configuration file; later lines win.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			f.Close()
			return fmt.Errorf("append to %s: %w", path, err)
		}
	}
	return f.Close()
}

func randomKey(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// handFileConfiguration is what every hand-made server's postgresql.conf
// gets before its port and socket folder: the results list the same.
func handFileConfiguration() []string {
	return slices.Concat(handConfiguration, handTLSConfiguration)
}
