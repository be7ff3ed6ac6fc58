package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersappsv1 "k8s.io/client-go/listers/apps/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/platform"
)

const (
	ceilingNamespace = "ceiling"
	benchNamespace   = "bench"
	operatorName     = platform.Name
	benchName        = "bench (this program)"
	machineName      = "machine (all processes)"
	// wallName holds the wall-clock seconds of a CPU measurement window.
	wallName = "wall-clock seconds"
)

var websitesGVR = websitev1.GroupVersion.WithResource("websites")

// env is one fresh cluster for one N.
type env struct {
	cfg      *config
	n        int
	deadline time.Duration
	res      *runResult
	logf     func(string, ...any)
	logDir   string

	devEnv  *devenv.Environment
	cluster *localcluster.Cluster
	admin   kubernetes.Interface
	dyn     dynamic.Interface
	applier *devenv.Applier
	sampler *rssSampler

	op        *devenv.Operator
	opCount   int
	endpoint  *operatorEndpoint
	pprofAddr string
	opCPUDone float64 // CPU of operator processes that have ended
	// burstStart is set by the burst for the cost scenario.
	burstStart *burstStart

	websiteHub, deploymentHub, serviceHub *hub
	deployments                           listersappsv1.DeploymentLister
	services                              listerscorev1.ServiceLister
	stopInformers                         context.CancelFunc
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

// loadClients are the admin's clients with the load client's settings:
// what creates the Websites and the ceilings' children.
func (e *env) loadClients() (kubernetes.Interface, dynamic.Interface, error) {
	c := e.loadConfig()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(c)
	return cs, dyn, err
}

// loadConfig is the admin's client configuration with the load client's
// settings.
func (e *env) loadConfig() *rest.Config {
	c := e.cluster.RESTConfig()
	c.QPS, c.Burst = float32(e.cfg.load.QPS), e.cfg.load.Burst
	if c.QPS <= 0 {
		// client-go: a negative QPS means no client-side rate limiter (0
		// would mean its default of 5).
		c.QPS = -1
	}
	c.UserAgent = "platform-operator-bench"
	return c
}

// forEach runs f for 0..n-1 on the given number of workers, each with
// retries, and returns the number of failures and the first error.
func forEach(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) (int, error) {
	var next atomic.Int64
	var failed failures
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				failed.add(retried(ctx, func() error { return f(ctx, i) }))
			}
		})
	}
	wg.Wait()
	return failed.count()
}

// retried runs f until it succeeds, five times at most, waiting 200 ms
// longer after each failure, or until ctx ends; it returns f's last error.
func retried(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		if err = f(); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// failures counts the errors given to add, and keeps the first.
type failures struct {
	mu    sync.Mutex
	n     int
	first error
}

func (f *failures) add(err error) {
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

func (f *failures) count() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.first
}

func siteName(i int) string { return fmt.Sprintf("site-%05d", i) }

func (e *env) createNamespace(ctx context.Context, name string) error {
	_, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// deleteNamespace empties a namespace, deleting its Deployments,
// ReplicaSets, pods (without a grace period: kwok runs no containers) and
// Services with the load client's workers, then deletes it and waits until
// it is gone. Left to the namespace controller, which deletes Services one
// by one, and to the garbage collector, the deletion would drag on, using
// the CPU that the next phase measures.
func (e *env) deleteNamespace(ctx context.Context, name string) (time.Duration, error) {
	start := time.Now()
	cs, _, err := e.loadClients()
	if err != nil {
		return 0, err
	}
	background := metav1.DeletePropagationBackground
	now := int64(0)
	opts := metav1.DeleteOptions{PropagationPolicy: &background, GracePeriodSeconds: &now}
	type kind struct {
		list   func() ([]string, error)
		delete func(ctx context.Context, name string) error
	}
	names := func(items int, name func(i int) string) []string {
		out := make([]string, items)
		for i := range out {
			out[i] = name(i)
		}
		return out
	}
	for _, k := range []kind{{
		list: func() ([]string, error) {
			l, err := cs.AppsV1().Deployments(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return names(len(l.Items), func(i int) string { return l.Items[i].Name }), nil
		},
		delete: func(ctx context.Context, n string) error { return cs.AppsV1().Deployments(name).Delete(ctx, n, opts) },
	}, {
		list: func() ([]string, error) {
			l, err := cs.AppsV1().ReplicaSets(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return names(len(l.Items), func(i int) string { return l.Items[i].Name }), nil
		},
		delete: func(ctx context.Context, n string) error { return cs.AppsV1().ReplicaSets(name).Delete(ctx, n, opts) },
	}, {
		list: func() ([]string, error) {
			l, err := cs.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return names(len(l.Items), func(i int) string { return l.Items[i].Name }), nil
		},
		delete: func(ctx context.Context, n string) error { return cs.CoreV1().Pods(name).Delete(ctx, n, opts) },
	}, {
		list: func() ([]string, error) {
			l, err := cs.CoreV1().Services(name).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return names(len(l.Items), func(i int) string { return l.Items[i].Name }), nil
		},
		delete: func(ctx context.Context, n string) error { return cs.CoreV1().Services(name).Delete(ctx, n, opts) },
	}} {
		items, err := k.list()
		if err != nil {
			return time.Since(start), err
		}
		if _, err := forEach(ctx, len(items), e.cfg.load.Workers, func(ctx context.Context, i int) error {
			if err := k.delete(ctx, items[i]); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		}); err != nil {
			return time.Since(start), err
		}
	}
	if err := e.admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return time.Since(start), err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, e.deadline, true, func(ctx context.Context) (bool, error) {
		_, err := e.admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return time.Since(start), fmt.Errorf("namespace %s not gone after %s: %w", name, time.Since(start).Round(time.Second), err)
	}
	return time.Since(start), nil
}

// startOperator runs the operator with its ServiceAccount's token (see
// devenv.Environment.StartOperator) and returns the time until /readyz
// answered, the token request included (a few milliseconds).
func (e *env) startOperator(ctx context.Context, extraArgs ...string) (time.Duration, error) {
	args := append([]string{"--log-format=json"}, e.cfg.operatorArgs...)
	if e.cfg.heapProfile || e.cfg.cpuProfile > 0 {
		addr, err := freeLocalAddress()
		if err != nil {
			return 0, err
		}
		e.pprofAddr = addr
		args = append(args, "--pprof-bind-address="+addr)
	}
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

func freeLocalAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
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

// settle waits until the operator's writes stop (settleWrites), or for
// settleLimit, and returns the last scrape and how the wait ended.
func (e *env) settle(ctx context.Context, since requestCounts) (requestCounts, *settleResult, error) {
	scrape := func(ctx context.Context) (requestCounts, error) { return scrapeAPIServer(ctx, e.admin) }
	counts, res, err := settleWrites(ctx, scrape, since, settleEvery, settleLimit)
	if err == nil && !res.Settled {
		e.logf("the writes had not stopped after %s: the window ends with them still coming", res.Limit)
	}
	return counts, &res, err
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
