package benchkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/platform"
)

// Names of the CPU tables' columns beside the processes of the control
// plane, which are named by their executables.
const (
	OperatorName = platform.Name
	BenchName    = "bench (this program)"
	MachineName  = "machine (all processes)"
	// WallName holds the wall-clock seconds of a CPU measurement window.
	WallName = "wall-clock seconds"
)

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Repo is the repository's root, where deploy/ is.
	Repo string
	// Operator is the operator binary; with Simulations, PostgresCluster
	// pods run its instance manager.
	Operator string
	// LogDir receives the operators' logs.
	LogDir string
	// Manifests are applied, relative to Repo, before StartCluster
	// returns: nil installs deploy/ (every component), as a user would;
	// an empty list installs nothing.
	Manifests []string
	// Nodes and NodePods size the kwok nodes (defaults 1 and 1000).
	Nodes, NodePods int
	// Simulations runs the local cluster's simulation parts: storage,
	// snapshots, and real PostgreSQL for PostgresCluster pods.
	Simulations bool
	// Scheme of the Environment's Client (default: client-go's).
	Scheme *runtime.Scheme
	// Logf receives the cluster's progress.
	Logf func(string, ...any)
}

// Cluster is a fresh local cluster for one phase that measures, with the
// operator's manifests installed and the operator not yet started.
type Cluster struct {
	*devenv.Environment
	Dyn dynamic.Interface
	// StartSeconds is how long the cluster and the manifests took.
	StartSeconds float64
}

// StartCluster starts a fresh local cluster and installs opts.Manifests;
// the operator is started with StartOperator.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	start := time.Now()
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	env, err := devenv.StartEnvironment(ctx, devenv.EnvironmentOptions{
		RepoRoot:       opts.Repo,
		Scheme:         opts.Scheme,
		Manifests:      opts.Manifests,
		OperatorBinary: opts.Operator,
		DeferOperator:  true,
		OperatorLogDir: opts.LogDir,
		Cluster: localcluster.Options{
			Nodes:       opts.Nodes,
			NodePods:    opts.NodePods,
			Simulations: opts.Simulations,
			// The benchmarks start their clusters while the machine is
			// busy with the previous phase's remains.
			StartTimeout: 3 * time.Minute,
			Logf:         func(f string, a ...any) { logf("cluster: "+f, a...) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	c := &Cluster{Environment: env}
	if c.Dyn, err = dynamic.NewForConfig(env.Cluster.RESTConfig()); err != nil {
		env.Stop()
		return nil, err
	}
	c.StartSeconds = Round3(time.Since(start).Seconds())
	return c, nil
}

// LoadConfig is the admin's client configuration without a client-side
// rate limit: the client of a benchmark's load and of its scripted
// references.
func (c *Cluster) LoadConfig() *rest.Config {
	cfg := c.Cluster.RESTConfig()
	// client-go: a negative QPS means no client-side rate limiter (0 would
	// mean its default of 5).
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "platform-operator-bench"
	return cfg
}

// CreateNamespace creates a namespace, if it does not exist.
func CreateNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// PodsMarkedNotReady describes the NodeNotReady events in namespace (every
// namespace when empty): the node lifecycle controller saw a kwok node's
// heartbeat expire and marked its pods not ready, which invalidates the
// figures that need pods ready. "" when there are none.
func PodsMarkedNotReady(ctx context.Context, cs kubernetes.Interface, namespace string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=NodeNotReady"})
	if err != nil || len(list.Items) == 0 {
		return ""
	}
	first := list.Items[0]
	where := "namespace " + namespace
	if namespace == "" {
		where = "the cluster"
	}
	return fmt.Sprintf("%d NodeNotReady events in %s (first: %s %s at %s): the node lifecycle controller saw a node's heartbeat expire and marked its pods not ready, which kwok does not undo",
		len(list.Items), where, first.InvolvedObject.Kind, first.InvolvedObject.Name, first.FirstTimestamp.Format(time.TimeOnly))
}

// FreeLocalAddress is a free TCP address on loopback.
func FreeLocalAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ForEach runs f for 0..n-1 on the given number of workers, each with
// retries, and returns the number of failures and the first error.
func ForEach(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) (int, error) {
	var next atomic.Int64
	var failed Failures
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				failed.Add(Retried(ctx, func() error { return f(ctx, i) }))
			}
		})
	}
	wg.Wait()
	return failed.Count()
}

// Retried runs f until it succeeds, five times at most, waiting 200 ms
// longer after each failure, or until ctx ends; it returns f's last error.
func Retried(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		if err = f(); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// Failures counts the errors given to Add, and keeps the first.
type Failures struct {
	mu    sync.Mutex
	n     int
	first error
}

// Add counts err, unless it is nil.
func (f *Failures) Add(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.first == nil {
		f.first = err
	}
}

// Count is the number of errors and the first.
func (f *Failures) Count() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.first
}

// IgnoreExists is err unless it says the object exists.
func IgnoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Footprint is what a phase's operator processes used: the peak RSS
// sampled across them, each one's VmHWM (the kernel's exact peak) read
// just before it stopped, and their CPU.
type Footprint struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// AnonAtPeakMiB and FileAtPeakMiB split the peak sample into anonymous
	// memory (heap, stacks) and file-backed pages (mostly the binary's
	// code); PeakAnonMiB is the highest anonymous RSS seen.
	AnonAtPeakMiB float64 `json:"rssAnonAtPeakMiB"`
	FileAtPeakMiB float64 `json:"rssFileAtPeakMiB"`
	PeakAnonMiB   float64 `json:"peakRSSAnonMiB"`
	RSSSamples    int     `json:"rssSamples"`
	SampleEvery   string  `json:"sampleInterval"`
	// HWMMiB is VmHWM of each operator process, read just before it
	// stopped, oldest first.
	HWMMiB []float64 `json:"vmHWMMiB"`
	// CPUSeconds is the CPU time of every operator process of the phase.
	CPUSeconds float64 `json:"operatorCPUSeconds"`
}

// PeakHWMMiB is the highest VmHWM of the processes; false when none was
// read.
func (f Footprint) PeakHWMMiB() (float64, bool) {
	if len(f.HWMMiB) == 0 {
		return 0, false
	}
	return slices.Max(f.HWMMiB), true
}

// SampleInterval is how often the operator's RSS is sampled.
const SampleInterval = 200 * time.Millisecond

// Operator runs a phase's operator processes on a Cluster, one at a time
// (a restart stops one and starts the next), and records their Footprint.
type Operator struct {
	c       *Cluster
	args    []string
	sampler *RSSSampler

	// Proc is the running process, Metrics its endpoints; nil before the
	// first Start.
	Proc    *devenv.Operator
	Metrics *Endpoint

	cpuDone float64
	hwm     []float64
	started int
}

// NewOperator prepares the operator of a phase, run with args (each
// process gets them, after --log-format=json), and starts sampling.
func (c *Cluster) NewOperator(args ...string) *Operator {
	return &Operator{c: c, args: append([]string{"--log-format=json"}, args...), sampler: StartRSSSampler(SampleInterval)}
}

// Start runs one more operator process with extra args and returns the
// time until its /readyz answered.
func (o *Operator) Start(ctx context.Context, extra ...string) (time.Duration, error) {
	if o.Proc != nil {
		if exited, _ := o.Proc.Exited(); !exited {
			return 0, errors.New("an operator process is already running")
		}
	}
	start := time.Now()
	proc, err := o.c.StartOperator(ctx, append(slices.Clone(o.args), extra...)...)
	if err != nil {
		return 0, err
	}
	took := time.Since(start)
	o.Proc = proc
	o.started++
	o.sampler.Set(proc.PID())
	o.Metrics = NewEndpoint(proc.MetricsURL, proc.ProbesURL, o.c.Cluster.RESTConfig().BearerToken)
	return took, nil
}

// Stop stops the running process with SIGTERM, recording its VmHWM and CPU
// first, and returns how long it took to exit.
func (o *Operator) Stop() time.Duration {
	if o.Proc == nil {
		return 0
	}
	if exited, _ := o.Proc.Exited(); exited {
		return 0
	}
	pid := o.Proc.PID()
	if _, hwm, err := MemoryKiB(pid); err == nil {
		o.hwm = append(o.hwm, Round3(float64(hwm)/1024))
	}
	o.sampler.Sample()
	cpu, _ := CPUSeconds(pid)
	start := time.Now()
	_ = o.Proc.Stop(30 * time.Second)
	o.cpuDone += cpu
	return time.Since(start)
}

// CPUSeconds is the CPU time of every process so far, the running one's
// up to now.
func (o *Operator) CPUSeconds() float64 {
	total := o.cpuDone
	if o.Proc != nil {
		if exited, _ := o.Proc.Exited(); !exited {
			if v, err := CPUSeconds(o.Proc.PID()); err == nil {
				total += v
			}
		}
	}
	return total
}

// Footprint is what the processes used so far; call it after Stop for
// the last one's VmHWM.
func (o *Operator) Footprint() Footprint {
	peak, samples := o.sampler.Peak()
	anon, file, peakAnon := o.sampler.Split()
	return Footprint{
		PeakRSSMiB: Round3(float64(peak) / 1024), AnonAtPeakMiB: Round3(float64(anon) / 1024), FileAtPeakMiB: Round3(float64(file) / 1024),
		PeakAnonMiB: Round3(float64(peakAnon) / 1024), RSSSamples: samples, SampleEvery: SampleInterval.String(),
		HWMMiB: slices.Clone(o.hwm), CPUSeconds: Round3(o.CPUSeconds()),
	}
}

// Close stops the running process and the sampling.
func (o *Operator) Close() {
	o.Stop()
	o.sampler.Close()
}

// SnapshotCPU reads the CPU seconds of the control plane's components, of
// the operator (every process so far), of this program and of the machine,
// and the wall clock.
func (o *Operator) SnapshotCPU() CPUSnapshot {
	snap := SnapshotCPU(o.c.Cluster.PIDs())
	if o.started > 0 {
		snap[OperatorName] = o.CPUSeconds()
	}
	return snap
}

// SnapshotCPU reads the CPU seconds of the given processes (by executable
// name), of this program and of the machine, and the wall clock.
func SnapshotCPU(pids []int) CPUSnapshot {
	snap := CPUSnapshot{}
	for _, pid := range pids {
		if v, err := CPUSeconds(pid); err == nil {
			snap[ProcessName(pid)] += v
		}
	}
	if v, err := CPUSeconds(os.Getpid()); err == nil {
		snap[BenchName] = v
	}
	if v, err := MachineBusySeconds(); err == nil {
		snap[MachineName] = v
	}
	snap[WallName] = float64(time.Now().UnixNano()) / 1e9
	return snap
}

// ConditionReady tells whether an object's Ready condition is True for
// its current generation: status.observedGeneration, and the condition's
// own when set, equal metadata.generation.
func ConditionReady(u *unstructured.Unstructured) bool {
	gen := u.GetGeneration()
	if observed, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); !found || observed != gen {
		return false
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		if og, ok := m["observedGeneration"].(int64); ok && og != 0 && og != gen {
			return false
		}
		return m["status"] == "True"
	}
	return false
}

// EventWrites counts the writes of the events in namespace (every
// namespace when empty): one per event and one per series, by the
// controller that reported them and the kind they regard,
// "controller/Kind".
func EventWrites(ctx context.Context, cs kubernetes.Interface, namespace string) (map[string]int, error) {
	out := map[string]int{}
	cont := ""
	for {
		list, err := cs.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return out, err
		}
		for _, ev := range list.Items {
			controller := ev.ReportingController
			if controller == "" {
				controller = ev.DeprecatedSource.Component
			}
			key := controller + "/" + ev.Regarding.Kind
			out[key]++
			if ev.Series != nil {
				out[key]++
			}
		}
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}
