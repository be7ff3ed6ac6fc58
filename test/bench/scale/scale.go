// Package scale is the platform-scale scenarios of the benchmark (issue
// 31): Tenants and BackupJobs by the hundred and the thousand on one
// operator, each phase on a fresh local cluster with the operator
// installed from deploy/.
//
//   - backup-schedule: N BackupJobs on * * * * * (a snapshot target, then,
//     on another cluster, a volume target with its copy Job) side by side
//     with N CronJobs on * * * * * in the same cluster, for a window of
//     whole minutes: lateness of each run (its object seen by this
//     program's watch − its scheduled time) against the CronJob
//     controller's, runs missed or doubled, writes per run by kind, the
//     operator's CPU and memory; and retention (keepLast: 3) at the end of
//     the window;
//   - tenant-onboarding: N Tenants (two namespaces, an owner, a
//     ServiceAccount with credentials) created at once, until every one is
//     Ready, against the scripted reference (a plain client making the
//     same objects without an operator), in rounds; then, in the last
//     round, the operator's writes per Tenant, an idle window, a restart,
//     and the credentials issued;
//   - platform-restart: N Websites, N Tenants and N BackupJobs on one
//     operator, restarted across a scheduled time: the time until every
//     object was reconciled again, the GETs and writes the restart caused,
//     and the runs around it.
package scale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/test/bench/benchkit"
)

// The scenarios of the package, in the order they run.
const (
	ScheduleScenario = "backup-schedule"
	TenantsScenario  = "tenant-onboarding"
	RestartScenario  = "platform-restart"
)

// Scenarios are the package's scenarios, in the order they run.
var Scenarios = []string{ScheduleScenario, TenantsScenario, RestartScenario}

// Config is what the benchmark's command line asks of the scenarios.
type Config struct {
	// Header is the run's description; Started is set by Run.
	Header benchkit.RunHeader
	// Repo is the repository's root, Operator the binary, LogDir where the
	// operators' logs go, Out the folder of the results.
	Repo, Operator, LogDir, Out string
	OperatorArgs                []string
	// Scenarios are those chosen, of Scenarios.
	Scenarios []string
	Ns        []int
	// Window is how long a schedule window lasts, in whole minutes.
	Window time.Duration
	// Idle is the Tenants' idle window.
	Idle time.Duration
	// Rounds is how many times the Tenants' onboarding and its scripted
	// reference run at each N.
	Rounds int
	// LoadWorkers are the workers of the client that creates the objects;
	// the scripted reference has as many as the operator.
	LoadWorkers, ScriptedWorkers int
	Logf                         func(string, ...any)
}

// Run measures the chosen scenarios at every N and writes the results to
// cfg.Out after each; the error joins what failed.
func Run(ctx context.Context, cfg Config) error {
	res := &Results{RunHeader: cfg.Header, Scenarios: cfg.Scenarios, Ns: cfg.Ns, Window: cfg.Window.String(), Idle: cfg.Idle.String(),
		Rounds: cfg.Rounds, LoadWorkers: cfg.LoadWorkers}
	res.Benchmark = Benchmark
	res.Started = time.Now()
	res.Notes = notes(cfg)
	var runErr error
	for _, n := range cfg.Ns {
		if ctx.Err() != nil {
			runErr = errors.Join(runErr, ctx.Err())
			break
		}
		r := runN(ctx, cfg, n)
		res.Runs = append(res.Runs, r)
		for _, e := range r.Errors {
			runErr = errors.Join(runErr, fmt.Errorf("scale N=%d: %s", n, e))
		}
		res.Finished = time.Now()
		if err := Write(cfg.Out, res); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

func runN(ctx context.Context, cfg Config, n int) (r *RunResult) {
	r = &RunResult{N: n}
	defer func() {
		if p := recover(); p != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("panic: %v\n%s", p, debug.Stack()))
		}
	}()
	began := time.Now()
	logf := func(format string, args ...any) {
		cfg.Logf("[scale N=%d %6.1fs] %s", n, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	run := &runner{cfg: cfg, n: n, logf: logf, res: r}
	for _, s := range cfg.Scenarios {
		if ctx.Err() != nil {
			r.Errors = append(r.Errors, ctx.Err().Error())
			return r
		}
		switch s {
		case ScheduleScenario:
			for _, target := range []string{snapshotTarget, volumeTarget} {
				sch, err := run.schedule(ctx, target)
				if sch != nil {
					r.Schedule = append(r.Schedule, sch)
				}
				run.fail(ScheduleScenario+" ("+target+")", err)
			}
		case TenantsScenario:
			t, err := run.tenants(ctx)
			r.Tenants = t
			run.fail(TenantsScenario, err)
		case RestartScenario:
			rs, err := run.platformRestart(ctx)
			r.Restart = rs
			run.fail(RestartScenario, err)
		}
	}
	return r
}

// runner runs the scenarios of one N.
type runner struct {
	cfg  Config
	n    int
	logf func(string, ...any)
	res  *RunResult
}

func (r *runner) fail(what string, err error) {
	if err != nil {
		r.res.Errors = append(r.res.Errors, what+": "+err.Error())
		r.logf("ERROR: %s: %v", what, err)
	}
}

// phase is one fresh cluster of a scenario, with the operator prepared.
type phase struct {
	*runner
	c  *benchkit.Cluster
	cl client.Client // the admin's, without a client-side rate limit
	cs kubernetes.Interface
	op *benchkit.Operator
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(websitev1.AddToScheme(s))
	utilruntime.Must(snapshotv1.AddToScheme(s))
	return s
}

// nodes sizes the kwok nodes for pods pods: a node per 500 N, and room for
// every pod with a margin.
func (r *runner) nodes(pods int) (nodes, perNode int) {
	nodes = max(1, r.n/500)
	return nodes, max(1000, (pods+pods/5+100)/nodes)
}

// startPhase starts a fresh cluster for purpose, installs deploy/ and
// prepares the operator (not started). stop records the cluster's health
// and stops it.
func (r *runner) startPhase(ctx context.Context, purpose string, simulations bool, pods int) (*phase, func(), error) {
	nodes, perNode := r.nodes(pods)
	r.logf("starting a local cluster for %s: %d kwok node(s) of %d pods", purpose, nodes, perNode)
	c, err := benchkit.StartCluster(ctx, benchkit.ClusterOptions{
		Repo: r.cfg.Repo, Operator: r.cfg.Operator, LogDir: filepath.Join(r.cfg.LogDir, fmt.Sprintf("scale-n%d", r.n), purpose),
		Nodes: nodes, NodePods: perNode, Simulations: simulations, Scheme: scheme(), Logf: r.logf,
	})
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(c.LoadConfig(), client.Options{Scheme: scheme()})
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(c.LoadConfig())
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	p := &phase{runner: r, c: c, cl: cl, cs: cs, op: c.NewOperator(r.cfg.OperatorArgs...)}
	return p, func() {
		p.op.Close()
		if msg := benchkit.PodsMarkedNotReady(context.WithoutCancel(ctx), c.Clientset, ""); msg != "" && !slices.Contains(r.res.ClusterHealth, msg) {
			r.res.ClusterHealth = append(r.res.ClusterHealth, purpose+": "+msg)
		}
		r.logf("stopping the cluster of %s", purpose)
		c.Stop()
	}, nil
}

// deadline bounds a wait for n objects: three minutes, more for large N.
func deadline(n int) time.Duration {
	return max(3*time.Minute, time.Duration(n)*600*time.Millisecond)
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// settle waits until the writes to resources stop: two scrapes in a row,
// 2 s apart, with no new one, for 60 s at most.
func (p *phase) settle(ctx context.Context, since benchkit.RequestCounts, resources []string) (benchkit.RequestCounts, benchkit.SettleResult, error) {
	scrape := func(ctx context.Context) (benchkit.RequestCounts, error) {
		return benchkit.ScrapeAPIServer(ctx, p.cs)
	}
	return benchkit.SettleWrites(ctx, scrape, since, 2*time.Second, 60*time.Second, 2, func(c benchkit.RequestCounts) float64 {
		return sumResources(c, resources)
	})
}

// sumResources adds the writes to each resource, except the creates of
// those listed with a "-POST" suffix (which this program makes).
func sumResources(c benchkit.RequestCounts, resources []string) float64 {
	total := 0.0
	for _, r := range resources {
		if name, ok := cutSuffix(r, "-POST"); ok {
			total += c.Sum(name, "POST")
		} else {
			total += c.Sum(r)
		}
	}
	return total
}

// pick keeps the counts of resources (as sumResources names them).
func pick(c benchkit.RequestCounts, resources []string) benchkit.RequestCounts {
	out := benchkit.RequestCounts{}
	for key, v := range c {
		for _, r := range resources {
			name, noCreates := cutSuffix(r, "-POST")
			verb, res := splitKey(key)
			if res == name && !(noCreates && verb == "POST") {
				out[key] = v
			}
		}
	}
	return out
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func splitKey(key string) (verb, resource string) {
	for i := range len(key) {
		if key[i] == ' ' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

// withoutOwnTokenRequest removes from the writes of a window in which this
// program started the operator the token request it made for the
// operator's kubeconfig (devenv.StartOperator asks one of its
// ServiceAccount): the operator's writes are the rest.
func withoutOwnTokenRequest(c benchkit.RequestCounts) benchkit.RequestCounts {
	const key = "POST serviceaccounts/token"
	out := maps.Clone(c)
	if out[key] > 1 {
		out[key]--
	} else {
		delete(out, key)
	}
	return out
}

// reconciledAll waits until the running operator process has reconciled
// at least n objects of each controller and its queues are empty, from
// start, and returns the wait.
func (p *phase) reconciledAll(ctx context.Context, start time.Time, controllers map[string]int) Wait {
	total := 0
	for _, n := range controllers {
		total += n
	}
	w := Wait{Target: total}
	limit := start.Add(deadline(total))
	for {
		if samples, err := p.op.Metrics.Scrape(ctx); err == nil {
			reached, done := 0, true
			for name, n := range controllers {
				got := int(benchkit.SumSamples(samples, "controller_runtime_reconcile_total", map[string]string{"controller": name}))
				depth := benchkit.SumSamples(samples, "workqueue_depth", map[string]string{"name": name})
				reached += min(got, n)
				if got < n || depth > 0 {
					done = false
				}
			}
			w.Reached = reached
			if done {
				w.Seconds = benchkit.Round3(time.Since(start).Seconds())
				return w
			}
		}
		if time.Now().After(limit) || ctx.Err() != nil {
			w.Seconds, w.TimedOut = benchkit.Round3(time.Since(start).Seconds()), true
			return w
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Write writes results.json, results.md and the charts into dir.
func Write(dir string, res *Results) error {
	res.Checks = Checks(res)
	data, err := benchkit.JSON(res)
	if err != nil {
		return err
	}
	return benchkit.WriteFiles(dir, map[string]string{
		"results.json":  data,
		"results.md":    Markdown(res),
		latenessChart:   LatenessChart(res).SVG(),
		onboardingChart: OnboardingChart(res).SVG(),
	})
}

// Rerender rewrites results.md and the charts from dir/results.json.
func Rerender(dir string) error {
	res := &Results{}
	if err := benchkit.ReadJSON(dir, res); err != nil {
		return err
	}
	return Write(dir, res)
}

// ResultsDir is where the scenarios write under the benchmark's -out.
func ResultsDir(out string) string { return filepath.Join(out, "scale") }
