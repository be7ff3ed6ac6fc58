// Command bench measures the platform operator on the local cluster
// (internal/localcluster) against the raw-client ceiling measured in the
// same run, for each number N of Websites, each phase that measures on a
// fresh cluster of its own. The
// scenarios, chosen with -scenarios:
//
//   - services: 200 ClusterIP Services, headless Services and ConfigMaps
//     created with one worker and with 16, on the bare cluster: whether the
//     API server creates them one at a time;
//   - ceiling: a plain client with no client-side rate limit and 16
//     workers (-load-workers) creates (POST) the Deployments the operator
//     builds for N Websites, then, on another fresh cluster, the Deployments
//     and the Services: time until they exist and until every Deployment is
//     Available. No operator can beat it on this cluster;
//   - scripted: without an operator, the work issue 11 allows an operator
//     per Website: the load client creates the Websites, and as many
//     workers as the operator has create each one's Deployment and Service
//     (owned by it), write its status and one event, and its status again
//     once the Deployment is Available. What it takes over the ceiling is
//     about what that work costs on this cluster: a reference, not a bound;
//   - burst: the operator runs with its defaults (or -operator-args), the
//     same load client creates N Websites at once: time until their
//     Deployments and Services exist and until every Website is Ready, and
//     the ratios operator ÷ ceiling;
//   - cost: the API server's write requests per Website during the burst,
//     and in a 60 s idle window;
//   - restart: time until a restarted operator is ready and a new Website is
//     Ready, and the writes the restart causes;
//   - drift: time until a deleted Service, or a Deployment whose image
//     someone else changed, is restored (p50, p99).
//
// cost, restart and drift work on the Websites the burst creates, so they
// need it. The operator's peak RSS and the CPU seconds of every process are
// recorded in every run; -heap-profile adds the operator's heap profile
// after the burst.
//
// Two more groups of scenarios, each a package of its own, run after the
// Websites' when -scenarios names them (the default is the Websites'
// alone; make bench-scale chooses "postgres,scale"):
//
//   - postgres (package postgres, issue 29): a three-instance
//     PostgresCluster with real PostgreSQL, created until Ready, then
//     -pg-tries failovers, switchovers and cut-offs, each timed to the
//     first write on the new primary, and the rows lost;
//   - pgbench (package pgbench, issue 54): pgbench's TPC-B-like and
//     select-only throughput and latency on a three-instance
//     PostgresCluster (at its primary's address and through CLUSTER-rw)
//     with synchronous: 1 then 0, next to a primary and two standbys set
//     up by hand in the same run, in -pgbench-rounds alternating rounds;
//   - backup-schedule, tenant-onboarding and platform-restart (package
//     scale, issue 31; "scale" chooses the three): BackupJobs side by side
//     with CronJobs over -scale-window, Tenants against their scripted
//     reference in -rounds rounds, and a restart with N of each kind, at
//     each N of -scale-n (100; -scale-large adds 1000).
//
// What they share (a fresh cluster with deploy/ installed, /proc sampling,
// percentiles, the API server's request counts, results and charts) is
// package benchkit.
//
// It writes results.json, results.md, time-to-ready.svg (against N) and
// ready-over-time-nN.svg (per N, over time) to -out, and the other groups'
// results to -out/postgres, -out/pgbench and -out/scale. Run it with make
// bench (or make bench-scale, make bench-pgbench), or:
//
//	KUBE_BIN_DIR=$(hack/kube-binaries.sh --dir) go run ./test/bench -operator bin/platform-operator -out test/bench/results
//	KUBE_BIN_DIR=$(hack/kube-binaries.sh --dir) POSTGRES_BIN_DIR=$(hack/postgres.sh --dir) go run ./test/bench -operator bin/platform-operator -out test/bench/results -scenarios postgres,scale
//
// go run ./test/bench -rerender -out DIR rewrites results.md and the charts
// from DIR/results.json.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/operator"
	"example.com/platform-operator/test/bench/benchkit"
	"example.com/platform-operator/test/bench/pgbench"
	"example.com/platform-operator/test/bench/postgres"
	"example.com/platform-operator/test/bench/scale"
)

// websiteScenarios measure Websites (issues 6 and 11), in the order they
// run; postgresScenario is package postgres's (issue 29), pgbenchScenario
// package pgbench's (issue 54), and
// scale.Scenarios are package scale's (issue 31), which the name
// scaleScenarios chooses together.
var websiteScenarios = []string{"services", "ceiling", "scripted", "burst", "cost", "restart", "drift"}

const (
	postgresScenario = "postgres"
	pgbenchScenario  = "pgbench"
	scaleScenarios   = "scale"
)

// allScenarios are every scenario, in the order they run.
var allScenarios = slices.Concat(websiteScenarios, []string{postgresScenario, pgbenchScenario}, scale.Scenarios)

type config struct {
	operator        string
	out             string
	repo            string
	logDir          string
	ns              []int
	heapProfile     bool
	cpuProfile      time.Duration
	operatorArgs    []string
	operatorArgsRaw string
	scenarioList    []string
	scenarios       map[string]bool
	// websiteList are the Website scenarios of scenarioList.
	websiteList []string
	// operatorClient is what the operator makes of its flags; load is the
	// client creating the Websites and the ceilings' children.
	operatorClient clientSettings
	load           clientSettings
	idle           time.Duration
	driftCount     int
	nodes          int
	// peers are another operator's figures, measured elsewhere, that the
	// results quote; nil for none.
	peers *quotedKopf
	// rounds is how many times the ceiling and the operator's burst run at
	// each N; round names an extra round in the log.
	rounds int
	round  string
	// roundNumber counts the rounds from 1, the measuring run's being the
	// last: the kopf peer runs before the operator's burst in odd rounds
	// and after it in even ones.
	roundNumber int
	// peerKopf is the kopf installation of the kopf scenario ("" for
	// none).
	peerKopf string
	// pgTries is how many failovers, switchovers and cut-offs the
	// postgres scenario measures.
	pgTries int
	// pgbenchDuration, pgbenchScale and pgbenchRounds are the pgbench
	// scenario's -T, -s and rounds.
	pgbenchDuration time.Duration
	pgbenchScale    int
	pgbenchRounds   int
	// pgbenchParameters are spec.parameters of the pgbench scenario's
	// PostgresCluster, to measure one setting's cost.
	pgbenchParameters map[string]string
	// scaleNs are the Ns of the scale scenarios, scaleWindow their
	// schedule window.
	scaleNs     []int
	scaleWindow time.Duration
}

func main() {
	// The clients' own logs are not figures, and this program prints its
	// progress itself.
	ctrllog.SetLogger(logr.Discard())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) == 4 && os.Args[1] == "-rerender" && os.Args[2] == "-out" {
		return rerender(os.Args[3])
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var runErr error
	if len(cfg.websiteList) > 0 {
		runErr = runWebsites(ctx, cfg)
	}
	if cfg.scenarios[postgresScenario] && ctx.Err() == nil {
		out := postgres.ResultsDir(cfg.out)
		err := postgres.Run(ctx, postgres.Config{Header: header(cfg), Repo: cfg.repo, Operator: cfg.operator, LogDir: filepath.Join(cfg.logDir, "postgres"),
			Out: out, OperatorArgs: cfg.operatorArgs, Tries: cfg.pgTries, Logf: logf})
		runErr = errors.Join(runErr, err)
		printChecks("postgres", out)
	}
	if cfg.scenarios[pgbenchScenario] && ctx.Err() == nil {
		out := pgbench.ResultsDir(cfg.out)
		h := header(cfg)
		// The scenario runs PostgreSQL's programs of hack/postgres.sh.
		h.CommandLine = postgresBinDirEnv + "=$(hack/postgres.sh --dir) " + h.CommandLine
		err := pgbench.Run(ctx, pgbench.Config{Header: h, Repo: cfg.repo, Operator: cfg.operator, LogDir: filepath.Join(cfg.logDir, "pgbench"),
			Out: out, OperatorArgs: cfg.operatorArgs, PostgresBinDir: postgresBinDir(), Scale: cfg.pgbenchScale, Duration: cfg.pgbenchDuration,
			Rounds: cfg.pgbenchRounds, Parameters: cfg.pgbenchParameters, Logf: logf})
		runErr = errors.Join(runErr, err)
		printChecks("pgbench", out)
	}
	var chosen []string
	for _, s := range scale.Scenarios {
		if cfg.scenarios[s] {
			chosen = append(chosen, s)
		}
	}
	if len(chosen) > 0 && ctx.Err() == nil {
		out := scale.ResultsDir(cfg.out)
		err := scale.Run(ctx, scale.Config{Header: header(cfg), Repo: cfg.repo, Operator: cfg.operator, LogDir: cfg.logDir, Out: out,
			OperatorArgs: cfg.operatorArgs, Scenarios: chosen, Ns: cfg.scaleNs, Window: cfg.scaleWindow, Idle: cfg.idle, Rounds: cfg.rounds,
			LoadWorkers: cfg.load.Workers, ScriptedWorkers: cfg.operatorClient.Workers, Logf: logf})
		runErr = errors.Join(runErr, err)
		printChecks("scale", out)
	}
	return errors.Join(runErr, ctx.Err())
}

// postgresBinDirEnv names the folder of PostgreSQL's programs, as
// hack/postgres.sh --dir prints it.
const postgresBinDirEnv = "POSTGRES_BIN_DIR"

// postgresBinDir is $POSTGRES_BIN_DIR, or where Debian's postgresql-15
// (which hack/postgres.sh installs) puts its programs.
func postgresBinDir() string {
	if dir := os.Getenv(postgresBinDirEnv); dir != "" {
		return dir
	}
	return "/usr/lib/postgresql/15/bin"
}

// logf prints a line of progress.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// header describes the run for the results of packages postgres and
// scale.
func header(cfg *config) benchkit.RunHeader {
	return benchkit.RunHeader{
		CommandLine: commandLine(cfg.repo),
		Args:        append([]string{"bench"}, relativeArgs(cfg.repo, os.Args[1:])...),
		Machine:     benchkit.DescribeMachine(),
		Operator:    benchkit.OperatorInfo{Binary: repoRelative(cfg.repo, cfg.operator), Version: operatorVersion(cfg.operator), Args: cfg.operatorArgs},
	}
}

// printChecks prints the targets of the results in dir, as judged.
func printChecks(title, dir string) {
	var res struct {
		Checks []benchkit.Check `json:"checks"`
	}
	if err := benchkit.ReadJSON(dir, &res); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", title, err)
		return
	}
	fmt.Fprintf(os.Stderr, "\n== %s\n", title)
	for _, c := range res.Checks {
		n := ""
		if c.N > 0 {
			n = fmt.Sprintf("N=%d ", c.N)
		}
		fmt.Fprintf(os.Stderr, "%-18s %s%s: %s; met? %s\n", c.Scenario, n, c.Target, c.Figure, c.Met)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(dir, "results.{json,md}, *.svg"))
}

// runWebsites runs the Website scenarios at every N and writes their
// results to -out.
func runWebsites(ctx context.Context, cfg *config) error {
	heap := "not asked for (-heap-profile); peak RSS is sampled from /proc every 200 ms"
	if cfg.heapProfile {
		heap = "taken after each burst from the operator's --pprof-bind-address (after a GC), saved in the logs folder; the top of go tool pprof -top is in footprint.heapTop. Serving profiles turns on the operator's sampling of allocations, which it leaves off otherwise, so the footprint above is that of a profiled operator, somewhat larger"
	}
	res := &results{
		Started:     time.Now(),
		CommandLine: commandLine(cfg.repo),
		Args:        append([]string{"bench"}, relativeArgs(cfg.repo, os.Args[1:])...),
		Machine:     benchkit.DescribeMachine(),
		Operator: operatorInfo{Binary: repoRelative(cfg.repo, cfg.operator), Version: operatorVersion(cfg.operator),
			Args: cfg.operatorArgs, Client: cfg.operatorClient},
		Load:        cfg.load,
		Scenarios:   cfg.websiteList,
		Ns:          cfg.ns,
		IdleWindow:  cfg.idle.String(),
		DriftCount:  cfg.driftCount,
		HeapProfile: heap,
		Quoted:      cfg.peers,
		Notes:       notes(cfg),
	}
	fmt.Fprintf(os.Stderr, "bench: N=%v, scenarios %v; load client: %s; operator: %s; operator logs in %s\n",
		cfg.ns, cfg.websiteList, cfg.load, cfg.operatorClient, cfg.logDir)

	var runErr error
	for _, n := range cfg.ns {
		if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		r := runN(ctx, cfg, n)
		res.Runs = append(res.Runs, r)
		if len(r.Errors) > 0 {
			runErr = errors.Join(runErr, fmt.Errorf("N=%d: %s", n, strings.Join(r.Errors, "; ")))
		}
		// Write after every N, so that a later failure keeps what was
		// measured.
		res.Finished = time.Now()
		if err := writeResults(cfg.out, res); err != nil {
			return err
		}
	}
	fmt.Fprint(os.Stderr, summary(res))
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(cfg.out, "results.{json,md}, *.svg"))
	return runErr
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&cfg.operator, "operator", "", "path of the operator binary (required; make build creates bin/platform-operator)")
	fs.StringVar(&cfg.out, "out", "test/bench/results", "folder for results.json, results.md and time-to-ready.svg")
	fs.StringVar(&cfg.repo, "repo", ".", "root of the repository, where deploy/ is")
	fs.StringVar(&cfg.logDir, "logs", "", "folder for the operator's logs and heap profiles (default: a new temporary folder, kept)")
	nList := fs.String("n", "100,1000", "comma-separated numbers of Websites")
	large := fs.Bool("large", false, "add N=5000")
	fs.BoolVar(&cfg.heapProfile, "heap-profile", false, "run the operator with --pprof-bind-address on a free local port and save its heap profile after each burst in the logs folder")
	fs.DurationVar(&cfg.cpuProfile, "cpu-profile", 0, "take CPU profiles of the operator (through --pprof-bind-address) and of kube-apiserver over this long from the start of the ceiling (Deployments and Services), the scripted client and each operator burst, saved in the logs folder (default: none)")
	fs.StringVar(&cfg.operatorArgsRaw, "operator-args", "", "extra flags for the operator, space-separated, e.g. \"--max-concurrent-reconciles=4 --kube-api-qps=50 --kube-api-burst=100\"")
	// The default is the Websites' scenarios alone, so that make bench
	// measures what it always has, in the same time; make bench-scale
	// chooses the others.
	scenarios := fs.String("scenarios", strings.Join(websiteScenarios, ","), "comma-separated scenarios: "+strings.Join(allScenarios, ",")+"; cost, restart and drift need burst; "+scaleScenarios+" chooses "+strings.Join(scale.Scenarios, ","))
	fs.IntVar(&cfg.pgTries, "pg-tries", 10, "failovers, switchovers and cut-offs the postgres scenario measures, each")
	fs.DurationVar(&cfg.pgbenchDuration, "pgbench-duration", 20*time.Second, "length of each run of the pgbench scenario (pgbench -T), in whole seconds")
	fs.IntVar(&cfg.pgbenchScale, "pgbench-scale", 5, "scale of the pgbench scenario's pgbench -i -s")
	fs.IntVar(&cfg.pgbenchRounds, "pgbench-rounds", 3, "rounds of the pgbench scenario at each synchronous setting, each running every workload on ours and by hand")
	pgbenchParameters := fs.String("pgbench-parameters", "", "spec.parameters of the pgbench scenario's PostgresCluster, as NAME=VALUE,NAME=VALUE (to measure one setting's cost; the hand-made servers keep PostgreSQL's defaults)")
	scaleNList := fs.String("scale-n", "100", "comma-separated numbers of Tenants and BackupJobs (and Websites, in the platform restart) of the scale scenarios")
	scaleLarge := fs.Bool("scale-large", false, "add N=1000 to the scale scenarios (the longest: two schedule windows, rounds of 1000 Tenants, a restart with 1000 of each kind)")
	fs.DurationVar(&cfg.scaleWindow, "scale-window", 5*time.Minute, "length of each schedule window of the backup-schedule scenario, in whole minutes")
	fs.IntVar(&cfg.load.Workers, "load-workers", 16, "workers of the client that creates the Websites and the ceilings' children, which has no client-side rate limit")
	fs.DurationVar(&cfg.idle, "idle", 60*time.Second, "length of the idle window of the cost and tenant-onboarding scenarios")
	fs.IntVar(&cfg.driftCount, "drift-count", 100, "changes per kind in the drift scenario")
	fs.IntVar(&cfg.nodes, "nodes", 0, "kwok nodes per cluster (default: max(1, N/500))")
	peers := fs.String("peers", "test/bench/peers.json", "JSON file of another operator's figures measured elsewhere, with their source, that the report quotes next to the burst; relative to -repo; \"\" for none")
	fs.StringVar(&cfg.peerKopf, "peer-kopf", "", "a kopf installation (DIR/bin/kopf runs kopf; set up as docs/performance.md says): adds the kopf scenario, the tutorial's kopf operator doing this operator's work per Website on a fresh cluster in every round of the burst, alternating with the operator")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds of the ceiling (Deployments and Services) and the operator's burst at each N, each on fresh clusters; the ratio targets are judged on the median of the rounds' ratios (not judged when a round has no ceiling figure), everything else on the last round; also the rounds of the tenant-onboarding scenario")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.operator == "" {
		return nil, errors.New("-operator is required: the path of the operator binary (make build creates bin/platform-operator)")
	}
	abs, err := filepath.Abs(cfg.operator)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(abs); err != nil || info.IsDir() {
		return nil, fmt.Errorf("-operator %s: not a file (make build creates bin/platform-operator)", cfg.operator)
	}
	cfg.operator = abs
	if _, err := os.Stat(filepath.Join(cfg.repo, "deploy", "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("no deploy/kustomization.yaml under -repo %s: run from the repository's root or pass -repo", cfg.repo)
	}
	if *peers != "" {
		path := *peers
		if !filepath.IsAbs(path) {
			path = filepath.Join(cfg.repo, path)
		}
		if cfg.peers, err = loadPeers(path); err != nil {
			return nil, err
		}
	}
	if os.Getenv(localcluster.BinDirEnv) == "" {
		return nil, fmt.Errorf("%s is not set: run make bench, or export %s=$(hack/kube-binaries.sh --dir)", localcluster.BinDirEnv, localcluster.BinDirEnv)
	}
	if cfg.ns, err = parseNs("-n", *nList); err != nil {
		return nil, err
	}
	if *large && !slices.Contains(cfg.ns, 5000) {
		cfg.ns = append(cfg.ns, 5000)
	}
	if len(cfg.ns) == 0 {
		return nil, errors.New("-n lists no N")
	}
	if cfg.scaleNs, err = parseNs("-scale-n", *scaleNList); err != nil {
		return nil, err
	}
	if *scaleLarge && !slices.Contains(cfg.scaleNs, 1000) {
		cfg.scaleNs = append(cfg.scaleNs, 1000)
	}
	if len(cfg.scaleNs) == 0 {
		return nil, errors.New("-scale-n lists no N")
	}
	if cfg.pgTries < 1 {
		return nil, errors.New("-pg-tries must be at least 1")
	}
	if cfg.pgbenchDuration < time.Second || cfg.pgbenchDuration%time.Second != 0 {
		return nil, errors.New("-pgbench-duration must be whole seconds, at least one")
	}
	if cfg.pgbenchScale < 1 || cfg.pgbenchRounds < 1 {
		return nil, errors.New("-pgbench-scale and -pgbench-rounds must be at least 1")
	}
	if cfg.pgbenchParameters, err = parseParameters(*pgbenchParameters); err != nil {
		return nil, fmt.Errorf("-pgbench-parameters: %w", err)
	}
	if cfg.scaleWindow < time.Minute || cfg.scaleWindow%time.Minute != 0 {
		return nil, errors.New("-scale-window must be whole minutes, at least one")
	}
	if cfg.scenarioList, err = parseScenarios(*scenarios); err != nil {
		return nil, err
	}
	cfg.scenarios = map[string]bool{}
	for _, s := range cfg.scenarioList {
		cfg.scenarios[s] = true
		if slices.Contains(websiteScenarios, s) {
			cfg.websiteList = append(cfg.websiteList, s)
		}
	}
	if cfg.peerKopf != "" {
		if cfg.peerKopf, err = filepath.Abs(cfg.peerKopf); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(cfg.peerKopf, "bin", "kopf")); err != nil {
			return nil, fmt.Errorf("-peer-kopf: %w (set up as docs/performance.md says)", err)
		}
		if !cfg.scenarios["burst"] {
			return nil, errors.New("-peer-kopf needs the burst scenario, which it is compared with")
		}
		cfg.scenarios[kopfScenario] = true
	}
	cfg.roundNumber = cfg.rounds
	if cfg.driftCount < 1 {
		return nil, errors.New("-drift-count must be at least 1")
	}
	if cfg.rounds < 1 {
		return nil, errors.New("-rounds must be at least 1")
	}
	if cfg.load.Workers < 1 {
		return nil, errors.New("-load-workers must be at least 1")
	}
	cfg.load.QPS = -1
	cfg.operatorArgs = strings.Fields(cfg.operatorArgsRaw)
	if cfg.operatorClient, err = operatorClient(cfg.operatorArgs); err != nil {
		return nil, err
	}
	if cfg.logDir == "" {
		if cfg.logDir, err = os.MkdirTemp("", "platform-operator-bench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(cfg.logDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseNs reads a comma-separated list of positive numbers.
func parseNs(flag, list string) ([]int, error) {
	var ns []int
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flag, s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// parseScenarios reads -scenarios: known names, each once, in the order
// they run; cost, restart and drift need the Websites that burst creates.
func parseScenarios(list string) ([]string, error) {
	chosen := map[string]bool{}
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s == scaleScenarios {
			for _, sc := range scale.Scenarios {
				chosen[sc] = true
			}
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (known: %s, and %s for %s)", s, strings.Join(allScenarios, ","), scaleScenarios, strings.Join(scale.Scenarios, ","))
		}
		chosen[s] = true
	}
	if len(chosen) == 0 {
		return nil, errors.New("-scenarios lists no scenario")
	}
	var out []string
	for _, s := range allScenarios {
		if !chosen[s] {
			continue
		}
		if (s == "cost" || s == "restart" || s == "drift") && !chosen["burst"] {
			return nil, fmt.Errorf("-scenarios: %s works on the Websites that the burst scenario creates: add burst", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// operatorClient is the client-side limit and workers the operator runs
// with, as its own option parsing reads -operator-args.
func operatorClient(args []string) (clientSettings, error) {
	opts, err := operator.ParseOptions(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		return clientSettings{}, fmt.Errorf("-operator-args: %w", err)
	}
	return clientSettings{QPS: opts.KubeAPIQPS, Burst: opts.KubeAPIBurst, Workers: opts.MaxConcurrentReconciles}, nil
}

// commandLine is the command that ran the benchmark, as typed, without the
// machine's paths: go run builds the program into the build cache, and
// KUBE_BIN_DIR is where hack/kube-binaries.sh put the control plane.
func commandLine(repo string) string {
	args := append([]string{os.Args[0]}, relativeArgs(repo, os.Args[1:])...)
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = strconv.Quote(a)
		}
		quoted[i] = a
	}
	if strings.Contains(os.Args[0], "go-build") || filepath.IsAbs(os.Args[0]) {
		quoted[0] = "go run ./test/bench"
	}
	return localcluster.BinDirEnv + "=$(hack/kube-binaries.sh --dir) " + strings.Join(quoted, " ")
}

func operatorVersion(binary string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func notes(cfg *config) []string {
	return []string{
		"Every phase that measures (the services probe, each ceiling, the operator's burst with the cost, restart and drift scenarios that follow it) runs on a fresh local cluster of its own (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), of the same size, on this machine: each starts from the same state, where on one shared cluster the later phases ran on the remains of the earlier ones. The operator, the control plane and this program share the machine's CPUs, and other work on the machine shows in the CPU tables.",
		fmt.Sprintf("The ceiling is a plain client-go clientset with %s creating (POST) website.DesiredDeployment and DesiredService of a websitetest Website (owner references removed: the Website does not exist, and the garbage collector would delete the children), first the Deployments alone, then Deployments and Services. The client that creates the Websites of the operator phase has the same settings. The operator runs with %s.", cfg.load, cfg.operatorClient),
		"Times are from the first create call to the moment this program's informer saw the last object meet the condition. Ready means the Ready condition is True with observedGeneration equal to metadata.generation; Available means status.availableReplicas equals spec.replicas.",
		"Ratios: operator's children exist ÷ ceiling's Deployments and Services exist; operator's Websites Ready ÷ ceiling's Deployments Available; operator's Deployments exist ÷ Deployments-alone ceiling's Deployments exist. The operator's Websites, its status writes and its events are work that the ceiling does not do.",
		fmt.Sprintf("Rounds (-rounds %d): the ceiling (Deployments and Services) and the operator's burst run %d times at each N, one after the other, each on a fresh cluster; each round's ratios compare that round's operator with that round's ceiling, and the ratio targets are judged on the median of the rounds' ratios: a round without the ceiling's figure leaves them not judged, and an operator that did not finish in any round misses them. The rounds before the last measure these times only; everything else (the Deployments-alone ceiling, footprint, costs, restart, drift, profiles) comes from the last round.", cfg.rounds, cfg.rounds),
		"Writes are counted from kube-apiserver's apiserver_request_total (verbs POST, PUT, PATCH, APPLY, DELETE), which has no user label. Writes to websites (except creates, which this program makes), websites/status and the main deployments and services resources are attributed to the operator: kube-controller-manager writes deployments/status only, which the ceiling phase checks (kcmDeploymentMainWrites). Events are written by the scheduler and kube-controller-manager as well, so the operator's events are counted as the events.k8s.io Events whose reportingController is platform-operator (one write each, plus one per series).",
		fmt.Sprintf("The windows that end when the writes stop (the burst's cost, the restart) wait for %d scrapes in a row, %s apart, without a new write, for %s at most; a window that reached the limit with writes still coming is recorded as unsettled (createWindowSettle, windowSettle), its counts are a lower bound, and its targets are not judged met.", settleQuiet, settleEvery, settleLimit),
		"Restart writes are the API server's writes from SIGTERM until the new process had reconciled every Website and the writes stopped, minus the new Website's own. The new process runs with --verbose, so its log names the Website of every write; changes of existing Websites seen by the watch, and writes logged for them, are cross-checks.",
		"Drift: a child Service is deleted (with a UID precondition), or a Deployment's image is changed with a strategic merge patch by another field manager; the time is from the call to the moment the informer saw the restored object.",
		"kwok renews the nodes' heartbeat Leases every 10 s, as kubelets do (internal/localcluster); NodeNotReady events are checked during the waits and at the end of each N (clusterHealth in results.json), since pods marked not ready would invalidate the Ready figures.",
		"RSS is sampled from /proc/PID/status (VmRSS, RssAnon, RssFile every 200 ms, VmHWM at the end of each process); the memory targets are judged on VmHWM, the kernel's exact peak, which samples can miss.",
	}
}

// relativeArgs are the benchmark's arguments with the paths of the
// machine (-operator, -out, -logs, -repo, -peers, -peer-kopf) relative to
// the repository, or their base names outside it.
func relativeArgs(repo string, args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(out[i], "-"), "=")
		switch name {
		case "operator", "out", "logs", "repo", "peers", "peer-kopf":
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(out) {
				break
			}
			i++
			value = out[i]
		}
		if filepath.IsAbs(value) {
			value = repoRelative(repo, value)
		}
		if hasValue {
			out[i] = "-" + name + "=" + value
		} else {
			out[i] = value
		}
	}
	return out
}

// rerender rewrites results.md and the charts from results.json (bench
// -rerender -out DIR), after a change of the report's layout: the
// Websites', or those of package postgres or scale, as the file's
// "benchmark" says.
func rerender(dir string) error {
	var kind struct {
		Benchmark string `json:"benchmark"`
	}
	if err := benchkit.ReadJSON(dir, &kind); err != nil {
		return err
	}
	switch kind.Benchmark {
	case postgres.Benchmark:
		return postgres.Rerender(dir)
	case pgbench.Benchmark:
		return pgbench.Rerender(dir)
	case scale.Benchmark:
		return scale.Rerender(dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	res := &results{}
	if err := json.Unmarshal(data, res); err != nil {
		return err
	}
	return writeResults(dir, res)
}

func writeResults(dir string, res *results) error {
	res.Checks = computeChecks(res)
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(res)), 0o644); err != nil {
		return err
	}
	for _, r := range res.Runs {
		if r.Burst == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, overTimeFile(r.N)), []byte(overTimeChart(res, r)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "time-to-ready.svg"), []byte(chart(res)), 0o644)
}

// repoRelative names path relative to the repository, so that results carry
// no absolute path of the machine they ran on; a path outside it is named by
// its file name alone.
func repoRelative(repo, path string) string {
	root, err := filepath.Abs(repo)
	if err == nil {
		if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return filepath.Base(path)
}

// parseParameters reads NAME=VALUE,NAME=VALUE; "" is none.
func parseParameters(list string) (map[string]string, error) {
	if list == "" {
		return nil, nil
	}
	params := map[string]string{}
	for _, pair := range strings.Split(list, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME=VALUE", pair)
		}
		params[name] = value
	}
	return params, nil
}
