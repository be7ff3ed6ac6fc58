// Command bench measures the platform operator on the local cluster
// (internal/localcluster) against the raw-client ceiling measured in the
// same run, for each number N of Websites, each N on a fresh cluster:
//
//   - burst: time until the children of N Websites created at once exist,
//     and until every Website is Ready, against a plain client that applies
//     the same N Deployments and Services with the operator's client limits
//     and workers (time until they exist and are Available);
//   - cost: the API server's write requests per Website on create, and in a
//     60 s idle window;
//   - restart: time until a restarted operator is ready and a new Website is
//     Ready, and the writes the restart causes;
//   - drift: time until a deleted Service, or a Deployment whose image
//     someone else changed, is restored (p50, p99);
//   - footprint: the operator's peak RSS and CPU seconds, next to the
//     control plane's CPU seconds per component.
//
// It writes results.json, results.md and time-to-ready.svg to -out. Run it
// with make bench, or:
//
//	KUBE_BIN_DIR=$(hack/kube-binaries.sh --dir) go run ./test/bench -operator bin/platform-operator -out bench/results
//
// go run ./test/bench -rerender -out DIR rewrites results.md and the chart
// from DIR/results.json.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/platform-operator/internal/localcluster"
)

var allScenarios = []string{"burst", "cost", "restart", "drift", "footprint"}

type config struct {
	operator        string
	out             string
	repo            string
	logDir          string
	ns              []int
	heapProfile     string
	operatorArgs    []string
	operatorArgsRaw string
	scenarioList    []string
	scenarios       map[string]bool
	client          clientSettings
	idle            time.Duration
	driftCount      int
	nodes           int
}

// results is what results.json holds.
type results struct {
	Started     time.Time      `json:"started"`
	Finished    time.Time      `json:"finished"`
	CommandLine string         `json:"commandLine"`
	Args        []string       `json:"args"`
	Machine     machineInfo    `json:"machine"`
	Operator    operatorInfo   `json:"operator"`
	Client      clientSettings `json:"clientSettings"`
	Scenarios   []string       `json:"scenarios"`
	Ns          []int          `json:"ns"`
	IdleWindow  string         `json:"idleWindow"`
	DriftCount  int            `json:"driftIterations"`
	LogDir      string         `json:"operatorLogDir"`
	HeapProfile string         `json:"heapProfile"`
	Runs        []*runResult   `json:"runs"`
	Checks      []check        `json:"checks"`
	Quoted      quotedKopf     `json:"quotedFromIssueNotMeasuredHere"`
	Notes       []string       `json:"notes"`
}

type operatorInfo struct {
	Binary  string   `json:"binary"`
	Version string   `json:"version"`
	Args    []string `json:"extraArgs"`
}

// quotedKopf are the tutorial kopf operator's figures as the issue quotes
// them; they were not measured here.
type quotedKopf struct {
	Source string             `json:"source"`
	Exist  map[string]float64 `json:"secondsUntilAllDeploymentsExisted"`
	Avail  map[string]float64 `json:"secondsUntilAllAvailable"`
	RSSMiB float64            `json:"rssMiB"`
}

var kopf = quotedKopf{
	Source: "quoted from issue 6, not measured here: the tutorial's kopf operator",
	Exist:  map[string]float64{"100": 6.0, "1000": 62.7},
	Avail:  map[string]float64{"100": 23.7, "1000": 240},
	RSSMiB: 115,
}

func main() {
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

	res := &results{
		Started:     time.Now(),
		CommandLine: commandLine(),
		Args:        os.Args,
		Machine:     describeMachine(),
		Operator:    operatorInfo{Binary: repoRelative(cfg.repo, cfg.operator), Version: operatorVersion(cfg.operator), Args: cfg.operatorArgs},
		Client:      cfg.client,
		Scenarios:   cfg.scenarioList,
		Ns:          cfg.ns,
		IdleWindow:  cfg.idle.String(),
		DriftCount:  cfg.driftCount,
		LogDir:      cfg.logDir,
		HeapProfile: "not available: the operator serves no pprof endpoint, and the benchmark does not modify it; peak RSS is sampled from /proc every 200 ms instead",
		Quoted:      kopf,
		Notes:       notes(cfg),
	}
	if cfg.heapProfile != "" {
		fmt.Fprintf(os.Stderr, "bench: -heap-profile %s: %s\n", cfg.heapProfile, res.HeapProfile)
	}
	fmt.Fprintf(os.Stderr, "bench: N=%v, scenarios %v, client %.0f QPS / burst %d / %d workers, operator logs in %s\n",
		cfg.ns, cfg.scenarioList, cfg.client.QPS, cfg.client.Burst, cfg.client.Workers, cfg.logDir)

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
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(cfg.out, "results.{json,md}, time-to-ready.svg"))
	return runErr
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&cfg.operator, "operator", "", "path of the operator binary (required; make build creates bin/platform-operator)")
	fs.StringVar(&cfg.out, "out", "bench/results", "folder for results.json, results.md and time-to-ready.svg")
	fs.StringVar(&cfg.repo, "repo", ".", "root of the repository, where deploy/ is")
	fs.StringVar(&cfg.logDir, "logs", "", "folder for the operator's logs (default: a new temporary folder, kept)")
	nList := fs.String("n", "100,1000", "comma-separated numbers of Websites, each on a fresh cluster")
	large := fs.Bool("large", false, "add N=5000")
	fs.StringVar(&cfg.heapProfile, "heap-profile", "", "not available: the operator serves no pprof; the results note it and report RSS instead")
	fs.StringVar(&cfg.operatorArgsRaw, "operator-args", "", "extra flags for the operator, space-separated, e.g. \"--max-concurrent-reconciles=8 --kube-api-qps=200 --kube-api-burst=400\"")
	scenarios := fs.String("scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios: "+strings.Join(allScenarios, ","))
	fs.DurationVar(&cfg.idle, "idle", 60*time.Second, "length of the idle window of the cost scenario")
	fs.IntVar(&cfg.driftCount, "drift-count", 100, "changes per kind in the drift scenario")
	fs.IntVar(&cfg.nodes, "nodes", 0, "kwok nodes per cluster (default: max(1, N/500))")
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
	if os.Getenv(localcluster.BinDirEnv) == "" {
		return nil, fmt.Errorf("%s is not set: run make bench, or export %s=$(hack/kube-binaries.sh --dir)", localcluster.BinDirEnv, localcluster.BinDirEnv)
	}
	for s := range strings.SplitSeq(*nList, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-n: %q is not a positive number", s)
		}
		cfg.ns = append(cfg.ns, n)
	}
	if *large && !slices.Contains(cfg.ns, 5000) {
		cfg.ns = append(cfg.ns, 5000)
	}
	if len(cfg.ns) == 0 {
		return nil, errors.New("-n lists no N")
	}
	cfg.scenarios = map[string]bool{}
	for s := range strings.SplitSeq(*scenarios, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ","))
		}
		if !cfg.scenarios[s] {
			cfg.scenarios[s] = true
			cfg.scenarioList = append(cfg.scenarioList, s)
		}
	}
	if cfg.driftCount < 1 {
		return nil, errors.New("-drift-count must be at least 1")
	}
	cfg.operatorArgs = strings.Fields(cfg.operatorArgsRaw)
	if cfg.client, err = clientFromOperatorArgs(cfg.operatorArgs); err != nil {
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

// clientFromOperatorArgs reads the operator's client limits and workers from
// its flags, with the operator's defaults (internal/operator/options.go).
func clientFromOperatorArgs(args []string) (clientSettings, error) {
	c := clientSettings{QPS: 50, Burst: 100, Workers: 4}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch name {
		case "kube-api-qps", "kube-api-burst", "max-concurrent-reconciles":
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return c, fmt.Errorf("-operator-args: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		var err error
		switch name {
		case "kube-api-qps":
			c.QPS, err = strconv.ParseFloat(value, 64)
		case "kube-api-burst":
			c.Burst, err = strconv.Atoi(value)
		case "max-concurrent-reconciles":
			c.Workers, err = strconv.Atoi(value)
		}
		if err != nil {
			return c, fmt.Errorf("-operator-args: --%s=%s: %w", name, value, err)
		}
	}
	if c.QPS <= 0 || c.Burst < 1 || c.Workers < 1 {
		return c, errors.New("-operator-args: QPS, burst and workers must be positive")
	}
	return c, nil
}

// commandLine is the command that ran the benchmark, as typed: go run
// builds the program into the build cache, so its path is replaced.
func commandLine() string {
	quoted := make([]string, len(os.Args))
	for i, a := range os.Args {
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = strconv.Quote(a)
		}
		quoted[i] = a
	}
	if strings.Contains(os.Args[0], "go-build") {
		quoted[0] = "go run ./test/bench"
	}
	return localcluster.BinDirEnv + "=" + os.Getenv(localcluster.BinDirEnv) + " " + strings.Join(quoted, " ")
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
		"Every N runs on a fresh local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) on this machine; the operator, the control plane and this program share its CPUs.",
		fmt.Sprintf("The ceiling is a plain client-go clientset with the operator's client limits (%.0f QPS, burst %d) and %d workers, server-side applying resources.Deployment and resources.Service of a testgen Website (owner references removed: the Website does not exist, and the garbage collector would delete the children). The creating client of the operator phase has the same limits and workers.", cfg.client.QPS, cfg.client.Burst, cfg.client.Workers),
		"Times are from the first create/apply call to the moment this program's informer saw the last object meet the condition. Ready means the Ready condition is True with observedGeneration equal to metadata.generation; Available means status.availableReplicas equals spec.replicas.",
		"Writes are counted from kube-apiserver's apiserver_request_total (verbs POST, PUT, PATCH, APPLY, DELETE), which has no user label. Writes to websites (except creates, which this program makes), websites/status and the main deployments and services resources are attributed to the operator: kube-controller-manager writes deployments/status only, which the ceiling phase checks (kcmDeploymentMainWrites). Events are written by the scheduler and kube-controller-manager as well, so the operator's events are counted as the events.k8s.io Events whose reportingController is platform-operator (one write each, plus one per series).",
		"Restart writes are the API server's writes from SIGTERM until the new process had reconciled every Website and the writes stopped, minus the new Website's own. The new process runs with --verbose, so its log names the Website of every write ('Status updated', 'Applied child'); the new Website's own writes are taken from it. Changes of existing Websites seen by the watch, and writes logged for them, are cross-checks.",
		"Drift: a child Service is deleted (with a UID precondition), or a Deployment's image is changed with a strategic merge patch by another field manager; the time is from the call to the moment the informer saw the restored object.",
		"kwok renews the nodes' heartbeat Leases every 10 s, as kubelets do (internal/localcluster); NodeNotReady events are checked during the waits and at the end of each N (clusterHealth in results.json), since pods marked not ready would invalidate the Ready figures.",
		"Heap profile: not available, the operator serves no pprof endpoint and the benchmark does not modify it; RSS is sampled from /proc/PID/status (VmRSS every 200 ms, VmHWM at the end of each process).",
	}
}

// rerender rewrites results.md and time-to-ready.svg from results.json
// (bench -rerender -out DIR), after a change of the report's layout.
func rerender(dir string) error {
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
