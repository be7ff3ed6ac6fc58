package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersappsv1 "k8s.io/client-go/listers/apps/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/internal/testgen"
)

const (
	ceilingNamespace = "ceiling"
	benchNamespace   = "bench"
	operatorName     = platform.Name
	benchName        = "bench (this program)"
	machineName      = "machine (all processes)"
	// wallName holds the wall-clock seconds of a CPU measurement window.
	wallName = "wall-clock seconds"
	// driftImage is what the drift scenario sets a Deployment's image to.
	driftImage   = "nginx:drift"
	driftManager = "bench-drift"
)

var websitesGVR = websitev1.GroupVersion.WithResource("websites")

// runResult holds every figure of one N.
type runResult struct {
	N                   int             `json:"n"`
	Nodes               int             `json:"nodes"`
	NodePods            int             `json:"podsPerNode"`
	Started             time.Time       `json:"started"`
	Finished            time.Time       `json:"finished"`
	ClusterStartSeconds float64         `json:"clusterStartSeconds"`
	WaitDeadline        string          `json:"waitDeadline"`
	Phases              []phase         `json:"phases"`
	Ceiling             *ceilingResult  `json:"ceiling,omitempty"`
	Burst               *burstResult    `json:"burst,omitempty"`
	Cost                *costResult     `json:"cost,omitempty"`
	Restart             *restartResult  `json:"restart,omitempty"`
	Drift               []driftResult   `json:"drift,omitempty"`
	Footprint           footprintResult `json:"footprint"`
	// ClusterHealth reports NodeNotReady events: the node lifecycle
	// controller marked pods not ready because kwok's node heartbeats came
	// late (an overloaded machine); kwok does not make them ready again.
	ClusterHealth []string `json:"clusterHealth,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

type phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// LoadAvg is /proc/loadavg at the start and the end: the machine is
	// shared.
	LoadAvgStart string `json:"loadAvgStart"`
	LoadAvgEnd   string `json:"loadAvgEnd"`
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

type clientSettings struct {
	QPS     float64 `json:"qps"`
	Burst   int     `json:"burst"`
	Workers int     `json:"workers"`
}

type ceilingResult struct {
	Client clientSettings `json:"client"`
	// ApplyCallsSeconds is the time until the last apply call returned.
	ApplyCallsSeconds float64    `json:"applyCallsSeconds"`
	Exist             waitResult `json:"exist"`
	Available         waitResult `json:"available"`
	ApplyErrors       int        `json:"applyErrors"`
	FirstError        string     `json:"firstError,omitempty"`
	// Writes are all the API server's write requests from the first apply
	// until every Deployment was available.
	Writes requestCounts `json:"writes"`
	// KCMDeploymentMainWrites are writes to deployments (not
	// deployments/status) beyond the benchmark's own N applies: writes of
	// kube-controller-manager to the main resource, expected 0, which
	// justifies attributing every such write to the operator later.
	KCMDeploymentMainWrites float64 `json:"kcmDeploymentMainWrites"`
	// EventWritesNonOperator are the event writes of the control plane for
	// N Deployments without any operator, for comparison with the operator
	// phase.
	EventWritesNonOperator   float64            `json:"eventWritesNonOperator"`
	NamespaceDeletionSeconds float64            `json:"namespaceDeletionSeconds"`
	CPUSeconds               map[string]float64 `json:"cpuSeconds"`
}

type burstResult struct {
	Client clientSettings `json:"creatingClient"`
	// OperatorStartSeconds is the time from starting the operator process
	// until /readyz answered 200, with no Websites.
	OperatorStartSeconds float64    `json:"operatorStartSeconds"`
	CreateCallsSeconds   float64    `json:"createCallsSeconds"`
	CreateErrors         int        `json:"createErrors"`
	FirstError           string     `json:"firstError,omitempty"`
	Exist                waitResult `json:"childrenExist"`
	Ready                waitResult `json:"ready"`
	// ExistRatio and ReadyRatio compare with the ceiling: operator ÷
	// ceiling; nil when either side is missing or timed out.
	ExistRatio *float64           `json:"existRatio,omitempty"`
	ReadyRatio *float64           `json:"readyVsAvailableRatio,omitempty"`
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// Operator is what the operator's own metrics said after the burst.
	Operator operatorStats `json:"operatorMetrics"`
}

type costResult struct {
	// CreateWindowSeconds spans from the first create until the writes
	// stopped after every Website was Ready.
	CreateWindowSeconds float64        `json:"createWindowSeconds"`
	CreateRaw           requestCounts  `json:"createWritesRaw"`
	Create              operatorWrites `json:"createWrites"`
	PerWebsite          operatorWrites `json:"createWritesPerWebsite"`
	// ChildrenPerWebsite is websites+websites/status+deployments+services
	// writes per Website.
	ChildrenPerWebsite float64 `json:"childrenWritesPerWebsite"`
	// OperatorEvents are the events.k8s.io Events whose reportingController
	// is the operator, in the benchmark's namespace, after the burst: one
	// write each, plus one per series.
	OperatorEvents     eventCount     `json:"operatorEvents"`
	EventsPerWebsite   float64        `json:"operatorEventWritesPerWebsite"`
	TotalPerWebsite    float64        `json:"totalWritesPerWebsite"`
	EventsByController map[string]int `json:"eventsByReportingController"`
	// ReconcilesPerWebsite and OperatorRequestsPerWebsite come from the
	// operator's own metrics over the create window.
	ReconcilesPerWebsite       float64            `json:"reconcilesPerWebsite"`
	OperatorRequestsPerWebsite map[string]float64 `json:"operatorRequestsPerWebsiteByMethod"`
	OperatorClientRequests     map[string]float64 `json:"operatorClientRequestsByMethod"`
	Idle                       *idleResult        `json:"idle,omitempty"`
}

type eventCount struct {
	Objects  int            `json:"objects"`
	Series   int            `json:"series"`
	ByReason map[string]int `json:"byReason"`
}

func (e eventCount) writes() int { return e.Objects + e.Series }

type idleResult struct {
	Seconds        float64        `json:"seconds"`
	Raw            requestCounts  `json:"writesRaw"`
	Writes         operatorWrites `json:"writes"`
	Total          float64        `json:"total"`
	OperatorEvents int            `json:"operatorEventWrites"`
	// OperatorClientRequests are the operator's own requests by method in
	// the window (leader election renewals included).
	OperatorClientRequests map[string]float64 `json:"operatorClientRequestsByMethod"`
}

type restartResult struct {
	StopSeconds float64 `json:"stopSeconds"`
	// ReadyzSeconds is from starting the new process to /readyz 200;
	// ReadyzFromStopSeconds from sending SIGTERM to the old one.
	ReadyzSeconds         float64 `json:"readyzSeconds"`
	ReadyzFromStopSeconds float64 `json:"readyzFromStopSeconds"`
	// NewWebsiteReady is from creating a new Website, right after /readyz,
	// until it was Ready.
	NewWebsiteReady waitResult `json:"newWebsiteReady"`
	// InitialPass is until the new process had reconciled every Website and
	// its queue was empty, from SIGTERM.
	InitialPass waitResult `json:"initialPass"`
	// WindowSeconds spans from SIGTERM until the writes stopped after the
	// initial pass.
	WindowSeconds float64        `json:"windowSeconds"`
	WindowRaw     requestCounts  `json:"windowWritesRaw"`
	Window        operatorWrites `json:"windowWrites"`
	// NewWebsiteOwn are the new Website's own writes: its status writes, as
	// the watch saw them, and the creates of its Deployment and Service,
	// which the operator makes once each (a create call that the
	// interceptor-counted tests of internal/controller/website check).
	NewWebsiteOwn operatorWrites `json:"newWebsiteOwnWrites"`
	// Writes = Window − NewWebsiteOwn: the writes the restart caused.
	Writes operatorWrites `json:"restartWrites"`
	Total  float64        `json:"restartWritesTotal"`
	// ExistingStatusChanges counts changes of existing Websites seen by the
	// watch in the window; it should be 0.
	ExistingStatusChanges int `json:"existingWebsiteChanges"`
	// OperatorEvents are the operator's events about existing Websites
	// created in the window.
	OperatorEvents int `json:"operatorEventWrites"`
}

type driftResult struct {
	Kind     string    `json:"kind"`
	Action   string    `json:"action"`
	Samples  []float64 `json:"samplesSeconds"`
	P50      float64   `json:"p50Seconds"`
	P99      float64   `json:"p99Seconds"`
	Max      float64   `json:"maxSeconds"`
	Timeouts int       `json:"timeouts"`
	Errors   int       `json:"errors"`
}

type footprintResult struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// AnonAtPeakMiB and FileAtPeakMiB split the peak sample into anonymous
	// memory (heap, stacks) and file-backed pages (mostly the binary's code);
	// PeakAnonMiB is the highest anonymous RSS seen.
	AnonAtPeakMiB float64 `json:"rssAnonAtPeakMiB"`
	FileAtPeakMiB float64 `json:"rssFileAtPeakMiB"`
	PeakAnonMiB   float64 `json:"peakRSSAnonMiB"`
	RSSSamples    int     `json:"rssSamples"`
	SampleEvery   string  `json:"sampleInterval"`
	// HWMMiB is VmHWM of each operator process, read just before it stopped.
	HWMMiB []float64 `json:"vmHWMMiB"`
	// CPUSeconds maps phase → process → CPU seconds (user+system).
	CPUSeconds map[string]map[string]float64 `json:"cpuSeconds"`
	// OperatorCPUSeconds is the operator's CPU over the whole run.
	OperatorCPUSeconds float64 `json:"operatorCPUSeconds"`
	HeapProfile        string  `json:"heapProfile"`
}

// env is one fresh cluster for one N.
type env struct {
	cfg      *config
	n        int
	deadline time.Duration
	res      *runResult
	logf     func(string, ...any)

	devEnv  *devenv.Environment
	cluster *localcluster.Cluster
	admin   kubernetes.Interface
	dyn     dynamic.Interface
	applier *devenv.Applier
	sampler *rssSampler

	op        *devenv.Operator
	opCount   int
	endpoint  *operatorEndpoint
	opCPUDone float64 // CPU of operator processes that have ended

	websiteHub, deploymentHub, serviceHub *hub
	deployments                           listersappsv1.DeploymentLister
	services                              listerscorev1.ServiceLister
	stopInformers                         context.CancelFunc
}

func runN(ctx context.Context, cfg *config, n int) (res *runResult) {
	res = &runResult{N: n, Started: time.Now(), Nodes: max(1, n/500), NodePods: 1000}
	if cfg.nodes > 0 {
		res.Nodes = cfg.nodes
	}
	// Room for every pod of the run on the nodes, with a margin.
	res.NodePods = max(1000, (n+n/5+100)/res.Nodes)
	deadline := max(3*time.Minute, time.Duration(n)*600*time.Millisecond)
	res.WaitDeadline = deadline.String()
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[N=%d %6.1fs] %s\n", n, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	e := &env{cfg: cfg, n: n, deadline: deadline, res: res, logf: logf, stopInformers: func() {}}
	res.Footprint.CPUSeconds = map[string]map[string]float64{}
	res.Footprint.SampleEvery = "200ms"
	res.Footprint.HeapProfile = "not available: the operator serves no pprof endpoint; RSS is sampled from /proc instead"
	// Registered first, so it runs last: a panic is recorded, after every
	// other deferred clean-up has run, and the next N still runs.
	defer func() {
		if r := recover(); r != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			logf("PANIC: %v", r)
		}
		res.Finished = time.Now()
	}()
	fail := func(err error) *runResult {
		res.Errors = append(res.Errors, err.Error())
		logf("ERROR: %v", err)
		return res
	}

	logf("starting a local cluster: %d kwok node(s) of %d pods", res.Nodes, res.NodePods)
	start := time.Now()
	// The manifests and the operator come after the ceiling phase, which
	// runs on the bare cluster.
	devEnv, err := devenv.StartEnvironment(ctx, devenv.EnvironmentOptions{
		RepoRoot:       cfg.repo,
		Manifests:      []string{},
		OperatorBinary: cfg.operator,
		DeferOperator:  true,
		OperatorLogDir: filepath.Join(cfg.logDir, fmt.Sprintf("n%d", n)),
		Cluster: localcluster.Options{
			Nodes:        res.Nodes,
			NodePods:     res.NodePods,
			StartTimeout: 3 * time.Minute,
			Logf:         func(f string, a ...any) { logf("cluster: "+f, a...) },
		},
	})
	if err != nil {
		return fail(fmt.Errorf("start cluster: %w", err))
	}
	e.devEnv, e.cluster, e.admin, e.applier = devEnv, devEnv.Cluster, devEnv.Clientset, devEnv.Applier
	defer func() {
		logf("stopping the cluster")
		devEnv.Stop()
	}()
	res.ClusterStartSeconds = round3(time.Since(start).Seconds())
	e.sampler = startRSSSampler(200 * time.Millisecond)
	defer e.sampler.close()
	defer e.stopOperator()
	defer func() { e.stopInformers() }()

	if e.dyn, err = dynamic.NewForConfig(devEnv.Cluster.RESTConfig()); err != nil {
		return fail(err)
	}
	// Last, before the cluster stops: were pods marked not ready anywhere?
	defer func() {
		if err := e.podsMarkedNotReady(context.WithoutCancel(ctx), "")(); err != nil {
			logf("cluster health: %v", err)
		}
	}()

	if cfg.scenarios["burst"] {
		if res.Ceiling, err = e.ceiling(ctx); err != nil {
			return fail(fmt.Errorf("ceiling: %w", err))
		}
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	if err := e.operatorBurst(ctx); err != nil {
		return fail(fmt.Errorf("operator burst: %w", err))
	}
	if cfg.scenarios["cost"] && ctx.Err() == nil {
		if err := e.idle(ctx); err != nil {
			return fail(fmt.Errorf("idle: %w", err))
		}
	}
	if cfg.scenarios["restart"] && ctx.Err() == nil {
		if err := e.restart(ctx); err != nil {
			return fail(fmt.Errorf("restart: %w", err))
		}
	}
	if cfg.scenarios["drift"] && ctx.Err() == nil {
		if err := e.drift(ctx); err != nil {
			return fail(fmt.Errorf("drift: %w", err))
		}
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return res
}

// podsMarkedNotReady fails when the node lifecycle controller has marked
// pods not ready (NodeNotReady events) in namespace: their Deployments will
// not become available again, so waiting for them is pointless.
func (e *env) podsMarkedNotReady(ctx context.Context, namespace string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		list, err := e.admin.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=NodeNotReady"})
		if err != nil || len(list.Items) == 0 {
			return nil
		}
		first := list.Items[0]
		where := "namespace " + namespace
		if namespace == "" {
			where = "the cluster"
		}
		msg := fmt.Sprintf("%d NodeNotReady events in %s (first: %s %s at %s): the node lifecycle controller saw a node's heartbeat expire and marked its pods not ready, which kwok does not undo",
			len(list.Items), where, first.InvolvedObject.Kind, first.InvolvedObject.Name, first.FirstTimestamp.Format(time.TimeOnly))
		if !contains(e.res.ClusterHealth, msg) {
			e.res.ClusterHealth = append(e.res.ClusterHealth, msg)
		}
		return errors.New(msg)
	}
}

func (e *env) phase(name string) func() {
	start, load := time.Now(), loadAvg()
	e.logf("== %s (load average %s)", name, load)
	return func() {
		e.res.Phases = append(e.res.Phases, phase{Name: name, Start: start, End: time.Now(), LoadAvgStart: load, LoadAvgEnd: loadAvg()})
	}
}

// snapshotCPU reads the CPU seconds of the control plane's components, the
// operator and this program.
func (e *env) snapshotCPU() cpuSnapshot {
	snap := cpuSnapshot{}
	for _, pid := range e.cluster.PIDs() {
		if v, err := cpuSeconds(pid); err == nil {
			snap[processName(pid)] += v
		}
	}
	if e.op != nil {
		if exited, _ := e.op.Exited(); !exited {
			if v, err := cpuSeconds(e.op.PID()); err == nil {
				snap[operatorName] = v + e.opCPUDone
			}
		}
	}
	if _, ok := snap[operatorName]; !ok && e.opCount > 0 {
		snap[operatorName] = e.opCPUDone
	}
	if v, err := cpuSeconds(os.Getpid()); err == nil {
		snap[benchName] = v
	}
	if v, err := machineBusySeconds(); err == nil {
		snap[machineName] = v
	}
	snap[wallName] = float64(time.Now().UnixNano()) / 1e9
	return snap
}

func (e *env) recordCPU(name string, before cpuSnapshot) map[string]float64 {
	d := e.snapshotCPU().diff(before)
	e.res.Footprint.CPUSeconds[name] = d
	return d
}

// limitedConfig is the admin's client configuration with the operator's
// client limits.
func (e *env) limitedClients() (kubernetes.Interface, dynamic.Interface, error) {
	c := e.cluster.RESTConfig()
	c.QPS, c.Burst = float32(e.cfg.client.QPS), e.cfg.client.Burst
	c.UserAgent = "platform-operator-bench"
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(c)
	return cs, dyn, err
}

// forEach runs f for 0..n-1 on the given number of workers and returns the
// number of failures and the first error.
func forEach(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) (int, error) {
	var next atomic.Int64
	var failures atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				var err error
				for attempt := range 5 {
					if err = f(ctx, i); err == nil || ctx.Err() != nil {
						break
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					failures.Add(1)
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	return int(failures.Load()), first
}

func siteName(i int) string { return fmt.Sprintf("site-%05d", i) }

func (e *env) createNamespace(ctx context.Context, name string) error {
	_, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ceiling creates the Deployments and Services of N Websites directly, with
// the operator's client limits and workers, and measures how long they take
// to exist and to be available: what no operator can beat.
func (e *env) ceiling(ctx context.Context) (*ceilingResult, error) {
	defer e.phase("burst: ceiling (raw client)")()
	res := &ceilingResult{Client: e.cfg.client}
	if err := e.createNamespace(ctx, ceilingNamespace); err != nil {
		return nil, err
	}
	cs, _, err := e.limitedClients()
	if err != nil {
		return nil, err
	}
	infCtx, stop := context.WithCancel(ctx)
	defer stop()
	factory := informers.NewSharedInformerFactoryWithOptions(e.admin, 0, informers.WithNamespace(ceilingNamespace))
	depHub, svcHub := newHub(), newHub()
	factory.Apps().V1().Deployments().Informer().AddEventHandler(depHub.handler())
	factory.Core().V1().Services().Informer().AddEventHandler(svcHub.handler())
	factory.Start(infCtx.Done())
	factory.WaitForCacheSync(infCtx.Done())
	defer factory.Shutdown()
	defer stop()

	cpu0 := e.snapshotCPU()
	before, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	exist := newProgress("ceiling: Deployments and Services exist", 2*e.n, start)
	available := newProgress("ceiling: Deployments available", e.n, start)
	defer depHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev == deleted {
			return
		}
		exist.mark("deployment/" + obj.GetName())
		if d, ok := obj.(*appsv1.Deployment); ok {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.AvailableReplicas >= want && d.Status.ObservedGeneration >= d.Generation {
				available.mark(d.Name)
			}
		}
	})()
	defer svcHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted {
			exist.mark("service/" + obj.GetName())
		}
	})()

	e.logf("ceiling: applying %d Deployments and %d Services with %d workers at %.0f QPS (burst %d)", e.n, e.n, e.cfg.client.Workers, e.cfg.client.QPS, e.cfg.client.Burst)
	apply := metav1.ApplyOptions{FieldManager: "bench-ceiling", Force: true}
	res.ApplyErrors, err = forEach(ctx, e.n, e.cfg.client.Workers, func(ctx context.Context, i int) error {
		w := testgen.Website(siteName(i), ceilingNamespace)
		d := website.DesiredDeployment(w)
		// The testgen Website does not exist: an owner reference to it
		// would have the garbage collector delete the children at once.
		d.OwnerReferences = nil
		if _, err := cs.AppsV1().Deployments(ceilingNamespace).Apply(ctx, d, apply); err != nil {
			return err
		}
		s := website.DesiredService(w)
		s.OwnerReferences = nil
		_, err := cs.CoreV1().Services(ceilingNamespace).Apply(ctx, s, apply)
		return err
	})
	if err != nil {
		res.FirstError = err.Error()
	}
	res.ApplyCallsSeconds = round3(time.Since(start).Seconds())
	e.logf("ceiling: apply calls done after %.2f s (%d errors)", res.ApplyCallsSeconds, res.ApplyErrors)
	deadline := start.Add(e.deadline)
	res.Exist = exist.wait(ctx, deadline, e.logf)
	e.logf("ceiling: all children exist: %s", res.Exist)
	res.Available = available.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, ceilingNamespace))
	e.logf("ceiling: all Deployments available: %s", res.Available)
	res.CPUSeconds = e.recordCPU("ceiling burst", cpu0)
	after, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return res, err
	}
	res.Writes = after.writesSince(before)
	res.KCMDeploymentMainWrites = res.Writes.sum("apps/deployments") - float64(e.n-res.ApplyErrors)
	res.EventWritesNonOperator = res.Writes.sum("events") + res.Writes.sum("events.k8s.io/events")
	e.logf("ceiling: write requests by verb and resource: %s", strings.Join(res.Writes.sorted(), " "))

	// Make room for the operator's turn.
	delStart := time.Now()
	if err := e.admin.CoreV1().Namespaces().Delete(ctx, ceilingNamespace, metav1.DeleteOptions{}); err != nil {
		return res, err
	}
	for {
		_, err := e.admin.CoreV1().Namespaces().Get(ctx, ceilingNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Since(delStart) > e.deadline || ctx.Err() != nil {
			return res, fmt.Errorf("namespace %s not gone after %s", ceilingNamespace, time.Since(delStart).Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	res.NamespaceDeletionSeconds = round3(time.Since(delStart).Seconds())
	e.logf("ceiling: namespace deleted in %.1f s", res.NamespaceDeletionSeconds)
	return res, nil
}

// startOperator runs the operator with its ServiceAccount's token (see
// devenv.Environment.StartOperator) and returns the time until /readyz
// answered, the token request included (a few milliseconds).
func (e *env) startOperator(ctx context.Context, extraArgs ...string) (time.Duration, error) {
	args := append([]string{"--log-format=json"}, e.cfg.operatorArgs...)
	args = append(args, extraArgs...)
	start := time.Now()
	op, err := e.devEnv.StartOperator(ctx, args...)
	if err != nil {
		return 0, err
	}
	took := time.Since(start)
	e.op = op
	e.opCount++
	e.sampler.set(op.PID())
	e.endpoint = newOperatorEndpoint(op.MetricsURL, op.ProbesURL, e.cluster.RESTConfig().BearerToken)
	return took, nil
}

// stopOperator stops the running operator with SIGTERM, recording its peak
// RSS and CPU first.
func (e *env) stopOperator() {
	if e.op == nil {
		return
	}
	if exited, _ := e.op.Exited(); exited {
		return
	}
	pid := e.op.PID()
	if _, hwm, err := memoryKiB(pid); err == nil {
		e.res.Footprint.HWMMiB = append(e.res.Footprint.HWMMiB, round3(float64(hwm)/1024))
	}
	e.sampler.sample()
	cpu, _ := cpuSeconds(pid)
	_ = e.op.Stop(30 * time.Second)
	e.opCPUDone += cpu
	peak, samples := e.sampler.peak()
	e.res.Footprint.PeakRSSMiB = round3(float64(peak) / 1024)
	e.res.Footprint.RSSSamples = samples
	anon, file, peakAnon := e.sampler.split()
	e.res.Footprint.AnonAtPeakMiB = round3(float64(anon) / 1024)
	e.res.Footprint.FileAtPeakMiB = round3(float64(file) / 1024)
	e.res.Footprint.PeakAnonMiB = round3(float64(peakAnon) / 1024)
	e.res.Footprint.OperatorCPUSeconds = round3(e.opCPUDone)
}

func websiteReady(obj metav1.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	var w websitev1.Website
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return false
	}
	c := meta.FindStatusCondition(w.Status.Conditions, websitev1.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue &&
		w.Status.ObservedGeneration == w.Generation &&
		(c.ObservedGeneration == 0 || c.ObservedGeneration == w.Generation)
}

// websiteObject is the tutorial's Website, as testgen builds it.
func websiteObject(name string) *unstructured.Unstructured {
	w := testgen.Website(name, benchNamespace)
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w.Spec)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": websitev1.GroupVersion.String(),
		"kind":       "Website",
		"metadata":   map[string]any{"name": name, "namespace": benchNamespace},
		"spec":       spec,
	}}
}

// startInformers watches Websites, Deployments and Services in the
// benchmark's namespace for the rest of the run.
func (e *env) startInformers(ctx context.Context) {
	infCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.stopInformers = cancel
	e.websiteHub, e.deploymentHub, e.serviceHub = newHub(), newHub(), newHub()
	factory := informers.NewSharedInformerFactoryWithOptions(e.admin, 0, informers.WithNamespace(benchNamespace))
	depInformer := factory.Apps().V1().Deployments()
	svcInformer := factory.Core().V1().Services()
	depInformer.Informer().AddEventHandler(e.deploymentHub.handler())
	svcInformer.Informer().AddEventHandler(e.serviceHub.handler())
	e.deployments, e.services = depInformer.Lister(), svcInformer.Lister()
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, benchNamespace, nil)
	dynFactory.ForResource(websitesGVR).Informer().AddEventHandler(e.websiteHub.handler())
	factory.Start(infCtx.Done())
	dynFactory.Start(infCtx.Done())
	factory.WaitForCacheSync(infCtx.Done())
	dynFactory.WaitForCacheSync(infCtx.Done())
}

// settle waits until the operator's writes stop: two scrapes in a row, 2 s
// apart, without a new write to websites, deployments or services. It
// returns the last scrape.
func (e *env) settle(ctx context.Context, since requestCounts) (requestCounts, error) {
	var last float64 = -1
	quiet := 0
	start := time.Now()
	for {
		now, err := scrapeAPIServer(ctx, e.admin)
		if err != nil {
			return nil, err
		}
		total := attribute(now.writesSince(since)).children()
		if total == last {
			quiet++
		} else {
			quiet = 0
		}
		last = total
		if quiet >= 2 || time.Since(start) > 60*time.Second || ctx.Err() != nil {
			return now, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// countOperatorEvents lists the events in the benchmark's namespace by
// reporting controller.
func (e *env) countOperatorEvents(ctx context.Context, excludeRegarding ...string) (eventCount, map[string]int, error) {
	op := eventCount{ByReason: map[string]int{}}
	byController := map[string]int{}
	cont := ""
	for {
		list, err := e.admin.EventsV1().Events(benchNamespace).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return op, byController, err
		}
		for _, ev := range list.Items {
			controller := ev.ReportingController
			if controller == "" {
				controller = ev.DeprecatedSource.Component
			}
			byController[controller]++
			if controller == platform.Name && !contains(excludeRegarding, ev.Regarding.Name) {
				op.Objects++
				op.ByReason[ev.Reason]++
				if ev.Series != nil {
					op.Series++
				}
			}
		}
		if cont = list.Continue; cont == "" {
			return op, byController, nil
		}
	}
}

// operatorBurst installs the operator, creates N Websites at once and
// measures how long until their children exist and they are Ready.
func (e *env) operatorBurst(ctx context.Context) error {
	endPhase := e.phase("burst: operator")
	var endOnce sync.Once
	end := func() { endOnce.Do(endPhase) }
	defer end()
	res := &burstResult{Client: e.cfg.client}
	e.res.Burst = res
	root := e.cfg.repo
	for _, m := range []string{"deploy"} {
		if _, err := e.applier.ApplyPaths(ctx, filepath.Join(root, m)); err != nil {
			return err
		}
	}
	took, err := e.startOperator(ctx)
	if err != nil {
		return err
	}
	res.OperatorStartSeconds = round3(took.Seconds())
	e.logf("operator ready after %.2f s (pid %d)", took.Seconds(), e.op.PID())
	if err := e.createNamespace(ctx, benchNamespace); err != nil {
		return err
	}
	e.startInformers(ctx)
	_, dyn, err := e.limitedClients()
	if err != nil {
		return err
	}
	opBefore, err := e.endpoint.waitScrape(ctx, 30*time.Second)
	if err != nil {
		return err
	}

	cpu0 := e.snapshotCPU()
	before, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	start := time.Now()
	exist := newProgress("operator: Deployments and Services exist", 2*e.n, start)
	ready := newProgress("operator: Websites Ready", e.n, start)
	unsub := []func(){
		e.deploymentHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev != deleted {
				exist.mark("deployment/" + obj.GetName())
			}
		}),
		e.serviceHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev != deleted {
				exist.mark("service/" + obj.GetName())
			}
		}),
		e.websiteHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev != deleted && websiteReady(obj) {
				ready.mark(obj.GetName())
			}
		}),
	}
	defer func() {
		for _, u := range unsub {
			u()
		}
	}()
	e.logf("operator: creating %d Websites with %d workers at %.0f QPS (burst %d)", e.n, e.cfg.client.Workers, e.cfg.client.QPS, e.cfg.client.Burst)
	res.CreateErrors, err = forEach(ctx, e.n, e.cfg.client.Workers, func(ctx context.Context, i int) error {
		_, err := dyn.Resource(websitesGVR).Namespace(benchNamespace).Create(ctx, websiteObject(siteName(i)), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		res.FirstError = err.Error()
	}
	res.CreateCallsSeconds = round3(time.Since(start).Seconds())
	e.logf("operator: create calls done after %.2f s (%d errors)", res.CreateCallsSeconds, res.CreateErrors)
	deadline := start.Add(e.deadline)
	res.Exist = exist.wait(ctx, deadline, e.logf)
	e.logf("operator: all children exist: %s", res.Exist)
	res.Ready = ready.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, benchNamespace))
	e.logf("operator: all Websites Ready: %s", res.Ready)
	res.CPUSeconds = e.recordCPU("operator burst", cpu0)
	if c := e.res.Ceiling; c != nil {
		res.ExistRatio = ratio(res.Exist, c.Exist)
		res.ReadyRatio = ratio(res.Ready, c.Available)
	}

	// API cost of the creation: every write from the first create until
	// the writes stopped.
	after, err := e.settle(ctx, before)
	if err != nil {
		return err
	}
	end()
	if opAfter, err := e.endpoint.waitScrape(ctx, 10*time.Second); err == nil {
		res.Operator = summarizeOperator(opAfter)
	}
	cost := &costResult{CreateWindowSeconds: round3(time.Since(start).Seconds())}
	cost.CreateRaw = after.writesSince(before)
	cost.Create = attribute(cost.CreateRaw)
	n := float64(e.n)
	cost.PerWebsite = operatorWrites{
		Websites:       round3(cost.Create.Websites / n),
		WebsitesStatus: round3(cost.Create.WebsitesStatus / n),
		Deployments:    round3(cost.Create.Deployments / n),
		Services:       round3(cost.Create.Services / n),
		EventsAll:      round3(cost.Create.EventsAll / n),
	}
	cost.ChildrenPerWebsite = round3(cost.Create.children() / n)
	if cost.OperatorEvents, cost.EventsByController, err = e.countOperatorEvents(ctx); err != nil {
		return err
	}
	cost.EventsPerWebsite = round3(float64(cost.OperatorEvents.writes()) / n)
	cost.TotalPerWebsite = round3(cost.ChildrenPerWebsite + cost.EventsPerWebsite)
	opStart := summarizeOperator(opBefore)
	cost.OperatorClientRequests = diffMap(res.Operator.Requests, opStart.Requests)
	cost.ReconcilesPerWebsite = round3((res.Operator.Reconciles - opStart.Reconciles) / n)
	cost.OperatorRequestsPerWebsite = map[string]float64{}
	for method, v := range cost.OperatorClientRequests {
		cost.OperatorRequestsPerWebsite[method] = round3(v / n)
	}
	e.res.Cost = cost
	e.logf("cost: writes per Website on create: websites %.2f, websites/status %.2f, deployments %.2f, services %.2f, operator events %.2f (all writers' events %.2f)",
		cost.PerWebsite.Websites, cost.PerWebsite.WebsitesStatus, cost.PerWebsite.Deployments, cost.PerWebsite.Services, cost.EventsPerWebsite, cost.PerWebsite.EventsAll)
	e.logf("cost: write requests by verb and resource: %s", strings.Join(cost.CreateRaw.sorted(), " "))
	return nil
}

func ratio(op, ceiling waitResult) *float64 {
	if !op.ok() || !ceiling.ok() || ceiling.Seconds <= 0 {
		return nil
	}
	r := round3(op.Seconds / ceiling.Seconds)
	return &r
}

func diffMap(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// idle counts the writes of a 60 s window with N Websites and nothing to do.
func (e *env) idle(ctx context.Context) error {
	defer e.phase("cost: idle")()
	res := &idleResult{}
	e.res.Cost.Idle = res
	events0, _, err := e.countOperatorEvents(ctx)
	if err != nil {
		return err
	}
	op0, _ := e.endpoint.waitScrape(ctx, 10*time.Second)
	cpu0 := e.snapshotCPU()
	before, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	start := time.Now()
	e.logf("idle: watching writes for %s", e.cfg.idle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(e.cfg.idle):
	}
	after, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	res.Seconds = round3(time.Since(start).Seconds())
	e.recordCPU("idle", cpu0)
	res.Raw = after.writesSince(before)
	res.Writes = attribute(res.Raw)
	res.Total = res.Writes.children()
	events1, _, err := e.countOperatorEvents(ctx)
	if err != nil {
		return err
	}
	res.OperatorEvents = events1.writes() - events0.writes()
	if op1, err := e.endpoint.waitScrape(ctx, 10*time.Second); err == nil && op0 != nil {
		res.OperatorClientRequests = diffMap(summarizeOperator(op1).Requests, summarizeOperator(op0).Requests)
	}
	e.logf("idle: %g writes to websites, websites/status, deployments and services in %.0f s; operator events %d; all writes: %s",
		res.Total, res.Seconds, res.OperatorEvents, strings.Join(res.Raw.sorted(), " "))
	return nil
}

// waitWebsiteReady creates a Website and waits until it is Ready.
func (e *env) createAndWaitReady(ctx context.Context, name string) (waitResult, time.Time, error) {
	start := time.Now()
	p := newProgress("Website "+name+" Ready", 1, start)
	defer e.websiteHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted && obj.GetName() == name && websiteReady(obj) {
			p.mark(name)
		}
	})()
	if _, err := e.dyn.Resource(websitesGVR).Namespace(benchNamespace).Create(ctx, websiteObject(name), metav1.CreateOptions{}); err != nil {
		return waitResult{}, start, err
	}
	return p.wait(ctx, start.Add(2*time.Minute), e.logf), start, nil
}

// restart stops the operator with SIGTERM, starts it again, and measures how
// soon it serves and what it writes.
func (e *env) restart(ctx context.Context) error {
	defer e.phase("restart")()
	res := &restartResult{}
	e.res.Restart = res
	const probe = "restart-probe"
	events0, _, err := e.countOperatorEvents(ctx)
	if err != nil {
		return err
	}
	// Every change of a Website in the window, by name: only the operator
	// writes Websites once they exist.
	var mu sync.Mutex
	changes := map[string]int{}
	defer e.websiteHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev == updated {
			mu.Lock()
			changes[obj.GetName()]++
			mu.Unlock()
		}
	})()
	cpu0 := e.snapshotCPU()
	before, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	stopStart := time.Now()
	e.stopOperator()
	res.StopSeconds = round3(time.Since(stopStart).Seconds())
	// --verbose: the new process logs every status write with the
	// Website's name, so that each write can be attributed.
	took, err := e.startOperator(ctx, "--verbose")
	if err != nil {
		return err
	}
	res.ReadyzSeconds = round3(took.Seconds())
	res.ReadyzFromStopSeconds = round3(time.Since(stopStart).Seconds())
	e.logf("restart: stopped in %.2f s; new process ready %.2f s after its start", res.StopSeconds, res.ReadyzSeconds)
	res.NewWebsiteReady, _, err = e.createAndWaitReady(ctx, probe)
	if err != nil {
		return err
	}
	e.logf("restart: new Website Ready %s after its creation", res.NewWebsiteReady)

	// Wait for the new process to have been through every Website.
	res.InitialPass = waitResult{Target: e.n + 1}
	for {
		samples, err := e.endpoint.scrape(ctx)
		if err == nil {
			st := summarizeOperator(samples)
			res.InitialPass.Reached = int(st.Reconciles)
			if st.Reconciles >= float64(e.n+1) && st.QueueDepth == 0 {
				break
			}
		}
		if time.Since(stopStart) > e.deadline {
			res.InitialPass.TimedOut = true
			break
		}
		if ctx.Err() != nil {
			res.InitialPass.Interrupted = true
			return ctx.Err()
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.InitialPass.Seconds = round3(time.Since(stopStart).Seconds())
	e.logf("restart: initial pass: %s", res.InitialPass)
	after, err := e.settle(ctx, before)
	if err != nil {
		return err
	}
	res.WindowSeconds = round3(time.Since(stopStart).Seconds())
	e.recordCPU("restart", cpu0)
	res.WindowRaw = after.writesSince(before)
	res.Window = attribute(res.WindowRaw)

	mu.Lock()
	for name, n := range changes {
		if name != probe {
			res.ExistingStatusChanges += n
		}
	}
	res.NewWebsiteOwn = operatorWrites{WebsitesStatus: float64(changes[probe]), Deployments: 1, Services: 1}
	mu.Unlock()
	res.Writes = res.Window.minus(res.NewWebsiteOwn)
	res.Total = res.Writes.children()
	events1, _, err := e.countOperatorEvents(ctx, probe)
	if err != nil {
		return err
	}
	res.OperatorEvents = events1.writes() - events0.writes()
	e.logf("restart: writes in the window %s; the new Website's own %s; the restart's own %g (existing Websites: %d changes seen, %d events)",
		writesStr(res.Window), writesStr(res.NewWebsiteOwn), res.Total, res.ExistingStatusChanges, res.OperatorEvents)
	return nil
}

// drift changes children behind the operator's back and measures how long
// until they are restored.
func (e *env) drift(ctx context.Context) error {
	defer e.phase("drift")()
	cpu0 := e.snapshotCPU()
	defer e.recordCPU("drift", cpu0)
	rng := rand.New(rand.NewPCG(uint64(e.n), 6))
	svc := driftResult{Kind: "Service", Action: "delete"}
	for i := range e.cfg.driftCount {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := siteName(rng.IntN(e.n))
		d, err := e.driftService(ctx, name)
		switch {
		case errors.Is(err, errTimedOut):
			svc.Timeouts++
		case err != nil:
			svc.Errors++
			e.logf("drift: service %s: %v", name, err)
		default:
			svc.Samples = append(svc.Samples, round3(d.Seconds()))
		}
		if (i+1)%25 == 0 {
			e.logf("drift: %d/%d Services deleted", i+1, e.cfg.driftCount)
		}
	}
	svc.summarize()
	e.res.Drift = append(e.res.Drift, svc)
	e.logf("drift: Service restored after delete: p50 %.3f s, p99 %.3f s, max %.3f s, %d timeouts", svc.P50, svc.P99, svc.Max, svc.Timeouts)

	dep := driftResult{Kind: "Deployment", Action: "image changed by another field manager (strategic merge patch)"}
	for i := range e.cfg.driftCount {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := siteName(rng.IntN(e.n))
		d, err := e.driftDeployment(ctx, name)
		switch {
		case errors.Is(err, errTimedOut):
			dep.Timeouts++
		case err != nil:
			dep.Errors++
			e.logf("drift: deployment %s: %v", name, err)
		default:
			dep.Samples = append(dep.Samples, round3(d.Seconds()))
		}
		if (i+1)%25 == 0 {
			e.logf("drift: %d/%d Deployments changed", i+1, e.cfg.driftCount)
		}
	}
	dep.summarize()
	e.res.Drift = append(e.res.Drift, dep)
	e.logf("drift: Deployment image restored: p50 %.3f s, p99 %.3f s, max %.3f s, %d timeouts", dep.P50, dep.P99, dep.Max, dep.Timeouts)
	return nil
}

var errTimedOut = errors.New("timed out")

const driftTimeout = 30 * time.Second

func (e *env) driftService(ctx context.Context, name string) (time.Duration, error) {
	old, err := e.services.Services(benchNamespace).Get(name)
	if err != nil {
		return 0, err
	}
	restored := make(chan struct{})
	var once sync.Once
	defer e.serviceHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted && obj.GetName() == name && obj.GetUID() != old.UID {
			once.Do(func() { close(restored) })
		}
	})()
	start := time.Now()
	uid := old.UID
	if err := e.admin.CoreV1().Services(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return 0, err
	}
	return waitClosed(ctx, restored, start)
}

func (e *env) driftDeployment(ctx context.Context, name string) (time.Duration, error) {
	old, err := e.deployments.Deployments(benchNamespace).Get(name)
	if err != nil {
		return 0, err
	}
	original := ""
	for _, c := range old.Spec.Template.Spec.Containers {
		if c.Name == website.ContainerName {
			original = c.Image
		}
	}
	if original == "" || original == driftImage {
		return 0, fmt.Errorf("unexpected image %q", original)
	}
	restored := make(chan struct{})
	var once sync.Once
	var sawDrift atomic.Bool
	defer e.deploymentHub.subscribe(func(obj metav1.Object, ev eventType) {
		d, ok := obj.(*appsv1.Deployment)
		if ev == deleted || !ok || d.Name != name {
			return
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != website.ContainerName {
				continue
			}
			switch {
			case c.Image == driftImage:
				sawDrift.Store(true)
			case c.Image == original && sawDrift.Load():
				once.Do(func() { close(restored) })
			}
		}
	})()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, website.ContainerName, driftImage)
	start := time.Now()
	if _, err := e.admin.AppsV1().Deployments(benchNamespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: driftManager}); err != nil {
		return 0, err
	}
	return waitClosed(ctx, restored, start)
}

func waitClosed(ctx context.Context, ch <-chan struct{}, start time.Time) (time.Duration, error) {
	select {
	case <-ch:
		return time.Since(start), nil
	case <-time.After(driftTimeout):
		return 0, errTimedOut
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (d *driftResult) summarize() {
	if len(d.Samples) == 0 {
		return
	}
	s := append([]float64(nil), d.Samples...)
	sort.Float64s(s)
	d.P50 = percentile(s, 0.50)
	d.P99 = percentile(s, 0.99)
	d.Max = s[len(s)-1]
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	rank := int(p*float64(len(sorted))+0.999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return sorted[rank]
}
