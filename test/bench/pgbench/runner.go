package pgbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/test/bench/benchkit"
)

// Workloads: pgbench's built-in TPC-B-like script (its default) and its
// select-only script (-S).
const (
	workloadTPCB       = "tpcb-like"
	workloadSelectOnly = "select-only"
)

var workloadArgs = map[string][]string{workloadTPCB: nil, workloadSelectOnly: {"-S"}}

// logPrefix names the transaction logs in a run's folder.
const logPrefix = "tx"

// Bounds of pgbench's commands: the initialization, and what a run may
// take beyond its duration (the vacuum pgbench does first, connecting,
// writing the logs).
const (
	initTimeout = 5 * time.Minute
	runSlack    = 3 * time.Minute
)

// server is what pgbench connects to, and its name in the results.
type server struct {
	name string
	info postgres.ConnInfo
}

// runner runs pgbench.
type runner struct {
	binDir string
	// workDir receives each run's folder of transaction logs.
	workDir  string
	settings PgbenchSettings
	// cpu reads the CPU seconds, by name, of the processes a run's
	// figures are shown with, cumulative.
	cpu  func() map[string]float64
	runs int
}

// env is pgbench's environment: the connection in libpq's variables,
// so that the password is on no command line.
func (r *runner) env(s server) []string {
	i := s.info
	return append(os.Environ(),
		"PGHOST="+i.Host, "PGPORT="+strconv.Itoa(i.Port), "PGUSER="+i.User, "PGPASSWORD="+i.Password, "PGDATABASE="+i.DBName,
		// Both sides speak TLS 1.3 only over TCP: encrypted, the server
		// not verified (verification costs a connection, which pgbench's
		// TPS leaves out, nothing more).
		"PGSSLMODE=require", "PGAPPNAME=pgbench")
}

// init runs pgbench -i at the scale asked for.
func (r *runner) init(ctx context.Context, s server) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.binDir, "pgbench"), "-i", "-q", "-s", strconv.Itoa(r.settings.Scale))
	cmd.Env = r.env(s)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := benchkit.Round3(time.Since(start).Seconds())
	if err != nil {
		return took, fmt.Errorf("pgbench -i on %s: %w: %s", s.name, err, lastLines(string(out), 5))
	}
	return took, nil
}

// run runs one workload for the run's duration and reads its report and
// transaction logs into run.
func (r *runner) run(ctx context.Context, s server, run *RunResult) error {
	r.runs++
	dir := filepath.Join(r.workDir, fmt.Sprintf("run-%03d", r.runs))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The logs of a run are read once; kept, they would fill the
	// temporary folder over a long run.
	defer os.RemoveAll(dir)
	run.Server = s.name
	p := r.settings
	args := append([]string{"-c", strconv.Itoa(p.Clients), "-j", strconv.Itoa(p.Threads), "-T", strconv.Itoa(p.DurationSeconds),
		"--log", "--log-prefix=" + filepath.Join(dir, logPrefix)}, workloadArgs[run.Workload]...)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.DurationSeconds)*time.Second+runSlack)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.binDir, "pgbench"), args...)
	cmd.Env = r.env(s)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := r.cpu()
	runErr := cmd.Run()
	run.CPUSeconds = cpuDiff(r.cpu(), before)
	if cmd.ProcessState != nil {
		run.CPUSeconds[cpuPgbench] = benchkit.Round3((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
	}
	var errs []error
	if runErr != nil {
		errs = append(errs, fmt.Errorf("pgbench %s: %w: %s", strings.Join(args, " "), runErr, lastLines(stderr.String(), 5)))
	}
	summary, err := parseSummary(stdout.String())
	if err != nil {
		errs = append(errs, err)
	}
	run.TPS, run.Processed, run.ReportedMeanMs = benchkit.Round3(summary.TPS), summary.Processed, summary.MeanLatencyMs
	log, err := readTxLogs(dir)
	if err != nil {
		errs = append(errs, err)
	}
	run.Failed = log.Failed
	if lat, ok := log.summarize(); ok {
		run.Latency = lat
	} else if err == nil {
		errs = append(errs, errors.New("the transaction logs list no completed transaction"))
	}
	return errors.Join(errs...)
}

// cpuDiff is after − before for each name of after, rounded.
func cpuDiff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		out[name] = benchkit.Round3(v - before[name])
	}
	return out
}

// lastLines is the end of a command's output, for an error.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
