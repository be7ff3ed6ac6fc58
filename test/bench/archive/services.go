package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/objectstore"
	"example.com/platform-operator/test/bench/benchkit"
)

// Bounds of the services' starts and stops.
const (
	weedStartTimeout = time.Minute
	stopTimeout      = 30 * time.Second
	pgStartTimeout   = 2 * time.Minute
)

// The bucket and paths in it: the archive PostgreSQL writes, and one path
// per reference, so that no upload finds its file there already.
const (
	bucket        = "bench"
	archivePath   = "archive"
	commandPath   = "ref-command"
	inProcessPath = "ref-inprocess"
	gzipPath      = "ref-gzip"
	rawPath       = "ref-raw"
	region        = "us-east-1"
)

// bench holds what one run started: the store, PostgreSQL, and the
// temporary folder of both.
type bench struct {
	cfg *config
	res *Results
	dir string

	weed     *exec.Cmd
	weedDone chan struct{}
	loc      objectstore.Location

	pg      *postgres.Instance
	pgProc  *postgres.Process
	pgLog   *os.File
	backupP string
	// archiveConfig is the file archive_command reads.
	archiveConfig string
}

// newBench starts weed and PostgreSQL; close stops what it started, also
// after an error.
func newBench(ctx context.Context, cfg *config, res *Results) (*bench, error) {
	dir, err := os.MkdirTemp("", "bench-archive-")
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, res: res, dir: dir}
	// PostgreSQL's user, when it is not this process's, must reach its
	// folders under this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		return b, err
	}
	logf("Working in %s", dir)
	if err := b.startWeed(ctx); err != nil {
		return b, err
	}
	if err := b.startPostgres(ctx); err != nil {
		return b, err
	}
	return b, nil
}

// close stops PostgreSQL, then weed, and removes the temporary folder
// unless -keep.
func (b *bench) close() error {
	var errs []error
	if b.pgProc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		if err := b.pgProc.Stop(ctx, postgres.StopFast); err != nil {
			errs = append(errs, fmt.Errorf("stop PostgreSQL: %w", err), b.pgProc.Kill())
		}
		cancel()
	}
	if b.pgLog != nil {
		b.pgLog.Close()
	}
	if b.weed != nil && b.weed.Process != nil {
		_ = syscall.Kill(-b.weed.Process.Pid, syscall.SIGTERM)
		select {
		case <-b.weedDone:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-b.weed.Process.Pid, syscall.SIGKILL)
			<-b.weedDone
		}
	}
	if b.cfg.keep {
		logf("Kept %s", b.dir)
	} else if err := os.RemoveAll(b.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// startWeed runs weed server with its master, volume, filer and S3 parts
// on 127.0.0.1, as the local cluster runs it (internal/localcluster), on
// free ports, and waits until S3 answers.
func (b *bench) startWeed(ctx context.Context) error {
	dir := filepath.Join(b.dir, "weed")
	for _, d := range []string{filepath.Join(dir, "data"), filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	keyID, secret := randomKey(10), randomKey(20)
	identities := filepath.Join(dir, "s3.json")
	if err := localcluster.WriteS3Identities(identities, "bench", keyID, secret); err != nil {
		return err
	}
	// weed's gRPC ports default to each port + 10000: all named, all free.
	ports, err := benchkit.FreeLocalPorts(8)
	if err != nil {
		return err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	weed := filepath.Join(b.cfg.weedDir, "weed")
	b.res.Store.Weed = toolVersion(weed, "version")
	logPath := filepath.Join(dir, "weed.log")
	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(weed, "-logdir="+filepath.Join(dir, "logs"), "server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+filepath.Join(dir, "data"),
		"-master.port="+p(0), "-master.port.grpc="+p(1),
		"-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer.port="+p(4), "-filer.port.grpc="+p(5),
		"-s3", "-s3.port="+p(6), "-s3.port.grpc="+p(7), "-s3.config="+identities,
		// Off: they listen on fixed ports, which another weed on this
		// machine may hold.
		"-s3.port.iceberg=0", "-s3.port.lance=0")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = dir
	// Its own process group, stopped with this process if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start weed: %w", err)
	}
	b.weed, b.weedDone = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(b.weedDone)
	}()
	b.loc = objectstore.Location{Endpoint: "http://127.0.0.1:" + p(6), Bucket: bucket, Prefix: archivePath, Region: region,
		AccessKeyID: keyID, SecretAccessKey: secret, Compress: true}
	logf("Started weed (S3 at %s), log %s", b.loc.Endpoint, logPath)
	return poll(ctx, weedStartTimeout, 200*time.Millisecond, "weed's S3 to answer", func(ctx context.Context) (bool, error) {
		select {
		case <-b.weedDone:
			return false, fmt.Errorf("weed exited; see %s", logPath)
		default:
		}
		return localcluster.S3Answers(ctx, b.loc.Endpoint) == nil, nil
	})
}

// startPostgres makes and starts a primary whose archive_command is the
// operator's wal-archive, with the settings the instance manager writes
// (postgres.Settings with Archive) and PostgreSQL's defaults otherwise.
func (b *bench) startPostgres(ctx context.Context) error {
	cred, err := benchkit.PostgresCredential()
	if err != nil {
		return err
	}
	root := filepath.Join(b.dir, "pg")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if b.pgLog, err = os.Create(filepath.Join(root, "postgres.log")); err != nil {
		return err
	}
	addr, port, err := freeAddress()
	if err != nil {
		return err
	}
	b.pg = &postgres.Instance{
		Name: "bench", BinDir: b.cfg.pgBinDir, DataDir: filepath.Join(root, "data"), SocketDir: filepath.Join(root, "sock"),
		ListenAddress: addr, Port: port, Credential: cred, Output: b.pgLog, Log: logr.Discard(),
	}
	if err := b.pg.InitDB(ctx, postgres.InitOptions{ReplicationPassword: randomKey(12)}); err != nil {
		return err
	}
	// The configuration of archive_command in a folder of PostgreSQL's
	// user, as the instance manager keeps it in its socket folder: the
	// command writes its last failure beside it.
	archiveDir := filepath.Join(root, "archive")
	if err := os.Mkdir(archiveDir, 0o700); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(archiveDir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	b.archiveConfig = filepath.Join(archiveDir, "object-store.json")
	if err := b.pg.WriteFile(b.archiveConfig, archiveConfigJSON(b.loc, "bench-primary")); err != nil {
		return err
	}
	b.pg.Settings = postgres.Settings{Archive: &postgres.Archive{
		Command: shellQuote(b.cfg.operator) + " instance wal-archive --config " + shellQuote(b.archiveConfig) + " %p",
		// The instance manager's default; the run never waits for it.
		Timeout: "300s",
	}}
	if _, err := b.pg.ConfigurePrimary(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, pgStartTimeout)
	defer cancel()
	if b.pgProc, err = b.pg.Start(startCtx); err != nil {
		return err
	}
	if err := b.pgProc.WaitReady(startCtx); err != nil {
		return fmt.Errorf("%w; see %s", err, b.pgLog.Name())
	}
	b.backupP = randomKey(12)
	if err := b.pg.EnsureReplicationRole(ctx, postgres.BackupUser, b.backupP); err != nil {
		return err
	}
	var version string
	if err := b.queryRow(ctx, "SHOW server_version", &version); err != nil {
		return err
	}
	b.res.Store.PostgreSQL = version
	// Recorded without this machine's paths: results are committed.
	b.res.Store.ArchiveCommand = "platform-operator instance wal-archive --config TEMP_DIR/" + filepath.Base(b.archiveConfig) + " %p"
	logf("Started PostgreSQL %s on %s:%d, log %s", version, addr, port, b.pgLog.Name())
	return nil
}

// archiveConfigJSON is the content of the file archive_command reads, in
// the shape of package instance's archiveConfig: where to archive, and the
// cluster that claims that path.
func archiveConfigJSON(loc objectstore.Location, uid string) []byte {
	data, _ := json.Marshal(struct {
		Archive *objectstore.Location `json:"archive"`
		Owner   objectstore.Owner     `json:"owner"`
	}{&loc, objectstore.Owner{UID: uid, Namespace: "bench", Cluster: "bench"}})
	return data
}

// queryRow runs one query over the socket as the superuser.
func (b *bench) queryRow(ctx context.Context, sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := b.pg.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, sql).Scan(dest...); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// freeAddress is 127.0.0.1 and a port free there, for PostgreSQL.
func freeAddress() (string, int, error) {
	ports, err := benchkit.FreeLocalPorts(1)
	if err != nil {
		return "", 0, err
	}
	return "127.0.0.1", ports[0], nil
}

// poll calls f every interval until it says done, returns an error, or
// timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, what string, f func(context.Context) (bool, error)) error {
	bounded, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, err := f(bounded)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-bounded.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			}
			return fmt.Errorf("waiting for %s: not within %s", what, timeout)
		case <-time.After(interval):
		}
	}
}

// shellQuote quotes s for /bin/sh, which runs archive_command.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func randomKey(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
