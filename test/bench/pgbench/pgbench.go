// Package pgbench is the database throughput scenario of the benchmark
// (issue 54): on a fresh local cluster whose simulation parts run real
// PostgreSQL, a three-instance PostgresCluster, and, in the same run on
// the same machine, a primary and two streaming standbys that this
// program sets up by hand with initdb, pg_basebackup -R and pg_ctl on
// loopback ports. With synchronous: 1 (synchronous_standby_names =
// 'ANY 1 (s1, s2)' by hand), then synchronous: 0 (”), both are loaded
// with pgbench's TPC-B-like and select-only workloads, in rounds that
// alternate ours and by hand, ours both at its primary pod's namespace
// address and through the -rw Service's loopback proxy. Each run's TPS is
// pgbench's, its latency percentiles come from pgbench's per-transaction
// logs; the targets are judged on the median over the rounds of the
// ratios ours ÷ by hand on the direct path. It connects only to loopback
// and to the addresses of the simulation's network namespaces.
package pgbench

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/test/bench/benchkit"
)

// Config is what the benchmark's command line asks of the scenario.
type Config struct {
	// Header is the run's description; Started is set by Run.
	Header benchkit.RunHeader
	// Repo is the repository's root, Operator the binary, LogDir where the
	// operator's logs go, Out the folder of the results.
	Repo, Operator, LogDir, Out string
	OperatorArgs                []string
	// PostgresBinDir holds pgbench, initdb, pg_basebackup and pg_ctl.
	PostgresBinDir string
	// Scale is pgbench -i -s; Duration each run's -T, in whole seconds;
	// Rounds how many times each run is made.
	Scale    int
	Duration time.Duration
	Rounds   int
	// Parameters are the PostgresCluster's spec.parameters (none: the
	// operator's defaults).
	Parameters map[string]string
	Logf       func(string, ...any)
}

// Every run's clients and threads (-c, -j).
const (
	clients = 4
	threads = 2
)

// Run measures the scenario and writes its results to cfg.Out; the error
// says what failed, after the results were written.
func Run(ctx context.Context, cfg Config) error {
	res := &Results{RunHeader: cfg.Header,
		Pgbench: PgbenchSettings{Scale: cfg.Scale, Clients: clients, Threads: threads, DurationSeconds: int(cfg.Duration / time.Second),
			Rounds: cfg.Rounds, Workloads: []string{workloadTPCB, workloadSelectOnly}, Synchronous: []int{1, 0}},
		Ours: oursSetup.with(cfg.Parameters),
		ByHand: ByHandSetup{InitDBFlags: handInitDBFlags, Configuration: byHandConfiguration(),
			Standbys: "pg_basebackup --write-recovery-conf --wal-method=stream --checkpoint=fast as the replication role with application_name s1 and s2, each started with pg_ctl on its own port; no replication slots"},
	}
	res.Benchmark = Benchmark
	res.Notes = notes(res.Pgbench)
	return benchkit.RunScenario("pgbench", &res.RunHeader, &res.Errors, cfg.Logf, func(logf func(string, ...any)) error {
		s := &scenario{cfg: cfg, res: res, logf: logf}
		return s.run(ctx)
	}, func() error { return Write(cfg.Out, res) })
}

// byHandConfiguration is what the hand-made servers are given, for the
// results.
func byHandConfiguration() []string {
	return append(handFileConfiguration(),
		"port and unix_socket_directories: a free loopback port each, a socket folder in the temporary folder",
		"synchronous_standby_names: ALTER SYSTEM SET … = 'ANY 1 (s1, s2)' for synchronous 1, '' for 0, then pg_reload_conf()")
}

// scenario is one run of the scenario.
type scenario struct {
	cfg  Config
	res  *Results
	logf func(string, ...any)

	ours   *ours
	hand   *handMade
	runner *runner
	// operatorCPU reads the operator's CPU seconds so far.
	operatorCPU func() float64
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

func (s *scenario) run(ctx context.Context) error {
	s.logf("starting a local cluster with the PostgreSQL simulation")
	c, err := benchkit.StartCluster(ctx, benchkit.ClusterOptions{
		Repo: s.cfg.Repo, Operator: s.cfg.Operator, LogDir: s.cfg.LogDir, Simulations: true, Scheme: scheme(), Logf: s.logf,
	})
	if err != nil {
		return err
	}
	defer func() {
		if msg := benchkit.PodsMarkedNotReady(context.WithoutCancel(ctx), c.Clientset, ""); msg != "" {
			s.res.ClusterHealth = append(s.res.ClusterHealth, msg)
		}
		s.logf("stopping the cluster")
		c.Stop()
	}()
	s.res.ClusterStartSeconds = c.StartSeconds
	op := c.NewOperator(s.cfg.OperatorArgs...)
	defer op.Close()
	if _, err := op.Start(ctx); err != nil {
		return err
	}
	s.operatorCPU = op.CPUSeconds
	if err := benchkit.CreateNamespace(ctx, c.Clientset, namespace); err != nil {
		return err
	}
	s.ours = &ours{c: c.Cluster, cl: c.Client, logf: s.logf, parameters: s.cfg.Parameters}
	s.logf("creating the PostgresCluster (%d instances, synchronous: 1)", instances)
	if err := s.ours.create(ctx); err != nil {
		return err
	}
	s.logf("setting up the primary and standbys by hand")
	s.hand, err = startByHand(ctx, s.cfg.PostgresBinDir, 1, s.logf)
	defer func() {
		if s.hand == nil {
			return
		}
		if err := s.hand.close(); err != nil {
			s.res.Errors = append(s.res.Errors, "stop the hand-made servers: "+err.Error())
		}
	}()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bench-pgbench-logs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	s.runner = &runner{binDir: s.cfg.PostgresBinDir, workDir: work, settings: s.res.Pgbench, cpu: s.cpu}
	if err := s.initialize(ctx); err != nil {
		return err
	}
	s.compareSettings(ctx)
	for _, sync := range s.res.Pgbench.Synchronous {
		if err := s.setSynchronous(ctx, sync); err != nil {
			return err
		}
		if err := s.rounds(ctx, sync); err != nil {
			return err
		}
	}
	return nil
}

// initialize runs pgbench -i on both primaries, and records the server's
// version.
func (s *scenario) initialize(ctx context.Context) error {
	primary, err := s.ours.primary(ctx)
	if err != nil {
		return err
	}
	if s.res.PostgreSQL, err = showSetting(ctx, primary.info, "server_version"); err != nil {
		return err
	}
	for _, side := range []struct {
		system string
		srv    server
	}{{systemOurs, primary}, {systemByHand, s.hand.app()}} {
		s.logf("%s: pgbench -i -s %d on %s", side.system, s.cfg.Scale, side.srv.name)
		took, err := s.runner.init(ctx, side.srv)
		run := InitRun{System: side.system, Seconds: took}
		if err != nil {
			run.Error = err.Error()
		}
		s.res.Init = append(s.res.Init, run)
		if err != nil {
			return err
		}
	}
	return nil
}

// compareSettings records the parameters that differ between the two
// primaries, and whether what initdb decided matches.
func (s *scenario) compareSettings(ctx context.Context) {
	primary, err := s.ours.primary(ctx)
	var oursAll, handAll map[string]string
	if err == nil {
		oursAll, err = showAll(ctx, primary.info)
	}
	if err == nil {
		handAll, err = showAll(ctx, s.hand.app().info)
	}
	if err != nil {
		s.res.Settings.Error = err.Error()
		s.res.ByHand.InitDBMatchesOurs = "not compared: " + err.Error()
		return
	}
	s.res.Settings = diffSettings(oursAll, handAll)
	s.res.ByHand.InitDBMatchesOurs = initDBMatch(oursAll, handAll)
}

// setSynchronous sets both sides to n synchronous standbys.
func (s *scenario) setSynchronous(ctx context.Context, n int) error {
	s.logf("synchronous %d on both sides", n)
	if err := s.ours.setSynchronous(ctx, int32(n)); err != nil {
		return err
	}
	return s.hand.setSynchronous(ctx, n)
}

// rounds runs every round at one synchronous setting: in each, for each
// workload, ours (direct and through the Service, in turns first), then
// by hand.
func (s *scenario) rounds(ctx context.Context, sync int) error {
	p := s.res.Pgbench
	for round := 1; round <= p.Rounds; round++ {
		for _, w := range p.Workloads {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			paths := []string{pathDirect, pathService}
			if round%2 == 0 {
				paths = []string{pathService, pathDirect}
			}
			for _, path := range paths {
				s.runOurs(ctx, RunResult{Round: round, Synchronous: sync, Workload: w, System: systemOurs, Path: path})
			}
			s.runByHand(ctx, RunResult{Round: round, Synchronous: sync, Workload: w, System: systemByHand, Path: pathLoopback})
		}
	}
	return ctx.Err()
}

// runOurs runs pgbench on ours, and fails the run when the primary
// changed meanwhile: its figures would mix two servers.
func (s *scenario) runOurs(ctx context.Context, run RunResult) {
	primary, err := s.ours.primary(ctx)
	srv := primary
	if err == nil && run.Path == pathService {
		srv, err = s.ours.service(ctx)
	}
	if err == nil {
		err = s.runner.run(ctx, srv, &run)
	}
	if err == nil {
		if after, perr := s.ours.primary(ctx); perr != nil || after.name != primary.name {
			err = fmt.Errorf("the primary changed during the run (%s before, %s after; %v)", primary.name, after.name, perr)
		}
	}
	s.record(run, err)
}

func (s *scenario) runByHand(ctx context.Context, run RunResult) {
	s.record(run, s.runner.run(ctx, s.hand.app(), &run))
}

func (s *scenario) record(run RunResult, err error) {
	if err != nil {
		run.Error = err.Error()
	}
	s.res.Runs = append(s.res.Runs, run)
	s.logf("round %d, synchronous %d, %s, %s %s: %.1f tps, p50 %.2f ms, p99 %.2f ms%s", run.Round, run.Synchronous, run.Workload, run.System, run.Path,
		run.TPS, run.Latency.P50Ms, run.Latency.P99Ms, errorSuffix(run.Error))
}

func errorSuffix(e string) string {
	if e == "" {
		return ""
	}
	return "; error: " + e
}

// cpu reads the cumulative CPU seconds of the processes a run's figures
// are shown with.
func (s *scenario) cpu() map[string]float64 {
	out := map[string]float64{}
	if v, err := benchkit.CPUSeconds(os.Getpid()); err == nil {
		out[cpuProgram] = v
	}
	if s.operatorCPU != nil {
		out[cpuOperator] = s.operatorCPU()
	}
	for _, pid := range s.ours.instanceManagers() {
		if v, err := benchkit.CPUSeconds(pid); err == nil {
			out[cpuManagers] += v
		}
	}
	if v, err := benchkit.MachineBusySeconds(); err == nil {
		out[cpuMachine] = v
	}
	return out
}

// initDBMatch says which of what initdb decides both primaries share.
func initDBMatch(ours, byHand map[string]string) string {
	var same, differ []string
	for _, name := range []string{"data_checksums", "server_encoding", "lc_collate", "lc_ctype", "password_encryption"} {
		if ours[name] == byHand[name] {
			same = append(same, fmt.Sprintf("%s = %s", name, ours[name]))
		} else {
			differ = append(differ, fmt.Sprintf("%s: ours %s, by hand %s", name, ours[name], byHand[name]))
		}
	}
	out := fmt.Sprintf("initdb flags as internal/instance/postgres's InitDB; on both primaries %v", same)
	if len(differ) > 0 {
		out += fmt.Sprintf("; differ: %v", differ)
	}
	return out
}
