package main

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	"example.com/platform-operator/test/bench/benchkit"
)

const (
	ceilingNamespace = "ceiling"
	benchNamespace   = "bench"
	operatorName     = benchkit.OperatorName
	benchName        = benchkit.BenchName
	machineName      = benchkit.MachineName
	// wallName holds the wall-clock seconds of a CPU measurement window.
	wallName = benchkit.WallName
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
	sampler *benchkit.RSSSampler

	op        *devenv.Operator
	opCount   int
	endpoint  *benchkit.Endpoint
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
		msg := benchkit.PodsMarkedNotReady(ctx, e.admin, namespace)
		if msg == "" {
			return nil
		}
		if !contains(e.res.ClusterHealth, msg) {
			e.res.ClusterHealth = append(e.res.ClusterHealth, msg)
		}
		return errors.New(msg)
	}
}

func (e *env) phase(name string) func() {
	start, load := time.Now(), benchkit.LoadAvg()
	e.logf("== %s (load average %s)", name, load)
	return func() {
		e.res.Phases = append(e.res.Phases, phase{Name: name, Start: start, End: time.Now(), LoadAvgStart: load, LoadAvgEnd: benchkit.LoadAvg()})
	}
}

// snapshotCPU reads the CPU seconds of the control plane's components, the
// operator and this program.
func (e *env) snapshotCPU() benchkit.CPUSnapshot {
	snap := benchkit.SnapshotCPU(e.cluster.PIDs())
	if e.op != nil {
		if exited, _ := e.op.Exited(); !exited {
			if v, err := benchkit.CPUSeconds(e.op.PID()); err == nil {
				snap[operatorName] = v + e.opCPUDone
			}
		}
	}
	if _, ok := snap[operatorName]; !ok && e.opCount > 0 {
		snap[operatorName] = e.opCPUDone
	}
	return snap
}

func (e *env) recordCPU(name string, before benchkit.CPUSnapshot) map[string]float64 {
	d := e.snapshotCPU().Diff(before)
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

func siteName(i int) string { return fmt.Sprintf("site-%05d", i) }

func (e *env) createNamespace(ctx context.Context, name string) error {
	return benchkit.CreateNamespace(ctx, e.admin, name)
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
		if _, err := benchkit.ForEach(ctx, len(items), e.cfg.load.Workers, func(ctx context.Context, i int) error {
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
		addr, err := benchkit.FreeLocalAddress()
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
	e.sampler.Set(op.PID())
	e.endpoint = benchkit.NewEndpoint(op.MetricsURL, op.ProbesURL, e.cluster.RESTConfig().BearerToken)
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
	if _, hwm, err := benchkit.MemoryKiB(pid); err == nil {
		e.res.Footprint.HWMMiB = append(e.res.Footprint.HWMMiB, benchkit.Round3(float64(hwm)/1024))
	}
	e.sampler.Sample()
	cpu, _ := benchkit.CPUSeconds(pid)
	_ = e.op.Stop(30 * time.Second)
	e.opCPUDone += cpu
	peak, samples := e.sampler.Peak()
	e.res.Footprint.PeakRSSMiB = benchkit.Round3(float64(peak) / 1024)
	e.res.Footprint.RSSSamples = samples
	anon, file, peakAnon := e.sampler.Split()
	e.res.Footprint.AnonAtPeakMiB = benchkit.Round3(float64(anon) / 1024)
	e.res.Footprint.FileAtPeakMiB = benchkit.Round3(float64(file) / 1024)
	e.res.Footprint.PeakAnonMiB = benchkit.Round3(float64(peakAnon) / 1024)
	e.res.Footprint.OperatorCPUSeconds = benchkit.Round3(e.opCPUDone)
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
func (e *env) settle(ctx context.Context, since benchkit.RequestCounts) (benchkit.RequestCounts, *settleResult, error) {
	scrape := func(ctx context.Context) (benchkit.RequestCounts, error) {
		return benchkit.ScrapeAPIServer(ctx, e.admin)
	}
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
