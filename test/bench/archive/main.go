// Command archive is the benchmark of continuous WAL archiving to an
// object store (issue 51), run on this machine with no cluster: SeaweedFS's
// weed serving S3 on 127.0.0.1, and one PostgreSQL 15 primary in a
// temporary directory whose archive_command is the operator's own
// `platform-operator instance wal-archive --config FILE %p`, with a
// configuration in the shape the instance manager writes (compression on,
// the default). It measures, side by side:
//
//   - archive throughput: WAL written by pgbench (its initialization, its
//     built-in TPC-B for -duration, then about -insert-mib of bulk inserts
//     of random data, a custom script that writes WAL faster than one file
//     at a time is archived), from the workload's start until the archiver
//     has caught up (every WAL segment completed during the workload
//     archived), as WAL segments archived × the segment size over that
//     time; and the bulk inserts' segments, read back from the store,
//     uploaded again by four references with no PostgreSQL in the way: the
//     same command run once per file in a loop,
//     objectstore.Client.ArchiveWAL in a loop in this process, gzip and
//     PutObject, and a raw PutObject of the uncompressed files, all with
//     the same client library;
//   - restore time per GiB: a base backup of the same server (pgbench's
//     tables and the bulk inserts' table) streamed into the store
//     (instance.TakeStoreBackup, the code of `instance
//     basebackup-to-store`), then objectstore.Client.FetchBaseBackup into
//     an empty directory (and its download and gunzip alone, into
//     nothing), next to pg_basebackup -X fetch of the same server into
//     another, with and without its final fsync.
//
// It writes results.json and results.md to -out and prints a table. Every
// process it starts stops with it; it connects to loopback addresses
// only. Run it with make bench-archive, or:
//
//	SEAWEEDFS_BIN_DIR=$(hack/seaweedfs.sh --dir) POSTGRES_BIN_DIR=$(hack/postgres.sh --dir) go run ./test/bench/archive -operator bin/platform-operator -out test/bench/results/archive
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/test/bench/benchkit"
)

// Benchmark names these results in results.json.
const Benchmark = "wal-archive"

type config struct {
	operator, out, repo string
	weedDir, pgBinDir   string
	// scale is pgbench's scale factor: the database's size, and the WAL
	// of its initialization.
	scale int
	// duration is the TPC-B run; clients and jobs are pgbench's
	// connections and threads in it and in the bulk inserts.
	duration      time.Duration
	clients, jobs int
	// insertMiB is about how much WAL the bulk inserts write.
	insertMiB int
	// timeout bounds the whole run; catchUp each wait for the archiver.
	timeout, catchUp time.Duration
	keep             bool
}

func main() {
	// The clients' own logs are not figures; this program prints its
	// progress itself.
	ctrllog.SetLogger(logr.Discard())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-archive:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	res := &Results{
		RunHeader: benchkit.RunHeader{
			Benchmark:   Benchmark,
			Started:     time.Now(),
			CommandLine: commandLine(cfg),
			Args:        append([]string{"bench-archive"}, os.Args[1:]...),
			Machine:     benchkit.DescribeMachine(),
			Operator:    benchkit.OperatorInfo{Binary: repoRelative(cfg.repo, cfg.operator), Version: toolVersion(cfg.operator, "--version")},
		},
		Workload: Workload{Scale: cfg.scale, DurationSeconds: cfg.duration.Seconds(), InsertMiB: cfg.insertMiB, Clients: cfg.clients, Jobs: cfg.jobs},
	}
	res.LoadAvgStart = benchkit.LoadAvg()
	b, err := newBench(ctx, cfg, res)
	if err == nil {
		err = b.measure(ctx)
	}
	if b != nil {
		err = errors.Join(err, b.close())
	}
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	res.Finished = time.Now()
	res.LoadAvgEnd = benchkit.LoadAvg()
	res.Notes = notes(res)
	if werr := writeResults(cfg.out, res); werr != nil {
		return errors.Join(err, werr)
	}
	printTable(res)
	fmt.Fprintf(os.Stderr, "bench-archive: wrote %s\n", filepath.Join(cfg.out, "results.{json,md}"))
	return err
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench-archive", flag.ContinueOnError)
	fs.StringVar(&cfg.operator, "operator", "bin/platform-operator", "the operator binary (make build): PostgreSQL's archive_command runs it")
	fs.StringVar(&cfg.out, "out", "test/bench/results/archive", "where results.json and results.md go")
	fs.StringVar(&cfg.repo, "repo", ".", "the repository's root, to name paths in the results")
	fs.StringVar(&cfg.weedDir, "weed-dir", os.Getenv(localcluster.ObjectStoreBinDirEnv), "the folder of SeaweedFS's weed (hack/seaweedfs.sh --dir); default $"+localcluster.ObjectStoreBinDirEnv)
	fs.StringVar(&cfg.pgBinDir, "pg-bin-dir", envOr("POSTGRES_BIN_DIR", "/usr/lib/postgresql/15/bin"), "the folder of PostgreSQL 15's programs, pgbench included (hack/postgres.sh --dir); default $POSTGRES_BIN_DIR")
	fs.IntVar(&cfg.scale, "scale", 20, "pgbench's scale factor (about 15 MiB of data each)")
	fs.DurationVar(&cfg.duration, "duration", time.Minute, "the pgbench TPC-B run")
	fs.IntVar(&cfg.insertMiB, "insert-mib", 768, "about how much WAL the bulk inserts write, in MiB (and data: their table is kept for the restore)")
	fs.IntVar(&cfg.clients, "clients", 4, "pgbench's clients in the TPC-B run and the bulk inserts")
	fs.IntVar(&cfg.jobs, "jobs", 2, "pgbench's threads in the TPC-B run and the bulk inserts")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Minute, "bound of the whole run")
	fs.DurationVar(&cfg.catchUp, "catch-up-timeout", 20*time.Minute, "bound of each wait for the archiver to catch up")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary folder (data, logs) at the end")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var problems []error
	if cfg.weedDir == "" {
		problems = append(problems, fmt.Errorf("-weed-dir is empty: set $%s from hack/seaweedfs.sh --dir", localcluster.ObjectStoreBinDirEnv))
	}
	if cfg.scale < 1 || cfg.clients < 1 || cfg.jobs < 1 || cfg.insertMiB < 1 || cfg.duration < time.Second {
		problems = append(problems, errors.New("-scale, -clients, -jobs and -insert-mib must be positive, -duration at least 1s"))
	}
	for _, p := range []*string{&cfg.operator, &cfg.repo, &cfg.out} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			problems = append(problems, err)
		}
		*p = abs
	}
	for _, f := range []string{cfg.operator, filepath.Join(cfg.weedDir, "weed"), filepath.Join(cfg.pgBinDir, "postgres"), filepath.Join(cfg.pgBinDir, "pgbench")} {
		if _, err := os.Stat(f); err != nil {
			problems = append(problems, fmt.Errorf("%w (make bench-archive builds and installs what it needs)", err))
		}
	}
	return cfg, errors.Join(problems...)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// commandLine is the command that ran the benchmark, without the
// machine's paths.
func commandLine(cfg *config) string {
	args := []string{"go run ./test/bench/archive"}
	for _, a := range os.Args[1:] {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if ok && (name == "operator" || name == "out" || name == "repo") {
			a = "-" + name + "=" + repoRelative(cfg.repo, value)
		}
		if strings.ContainsAny(a, " \t\"'$") {
			a = strconv.Quote(a)
		}
		args = append(args, a)
	}
	return localcluster.ObjectStoreBinDirEnv + "=$(hack/seaweedfs.sh --dir) POSTGRES_BIN_DIR=$(hack/postgres.sh --dir) " + strings.Join(args, " ")
}

// repoRelative is path relative to the repository, or its base name
// outside it.
func repoRelative(repo, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Base(path)
	}
	rel, err := filepath.Rel(repo, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filepath.Base(path)
	}
	return rel
}

// toolVersion is what binary says of its version.
func toolVersion(binary string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// logf prints a line of progress.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
