package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/test/bench/benchkit"
)

// scriptedName is the scripted phase's name in the phases and CPU tables.
const scriptedName = "scripted client"

// scripted does, without an operator, the work that issue 11 allows an
// operator per Website. The load client creates the Websites, as in the
// burst (no client-side rate limit, 16 workers); as many workers as the
// operator has take each created Website and create the Deployment and
// Service the operator builds for it (owned by it, so the garbage collector
// tracks them as it does the operator's), write its status (not ready yet)
// and one DeploymentCreated event, and, once the Deployment is Available,
// write its status again, Ready (a worker takes that before a new Website
// when both wait, as the operator's queue puts child events first). Each step
// waits for nothing but the API server: no watch to learn of the Website,
// no cache, no queue, no comparison. What it takes over the ceiling's time
// is about what that work costs on this cluster, and the burst is compared
// with it as well as with the ceiling. It is a reference, not a bound: a
// step's latency holds up its worker here (a Service's creation waits for
// its cluster IP), where an operator may overlap such waits otherwise.
func (e *env) scripted(ctx context.Context) (*scriptedResult, error) {
	defer e.phase(scriptedName)()
	res := &scriptedResult{Client: e.cfg.load}
	if _, err := e.applier.ApplyPaths(ctx, filepath.Join(e.cfg.repo, "deploy")); err != nil {
		return nil, err
	}
	if err := e.createNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	e.startInformers(ctx)
	defer e.stopInformers()
	w, err := e.newScriptedWriter()
	if err != nil {
		return nil, err
	}

	cpu0 := e.snapshotCPU()
	before, err := e.scrapeAPICounters(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for i := range e.n {
		w.sites[siteName(i)] = &scriptedSite{firstStatus: make(chan struct{})}
	}
	// Deployments first seen Available, for the second status write; the
	// channel is closed after the last. followWebsites calls queueReady
	// from one goroutine.
	becameAvailable := make(chan string, e.n)
	sent := 0
	queueReady := func(name string) {
		becameAvailable <- name
		if sent++; sent == e.n {
			close(becameAvailable)
		}
	}
	progress, unsubscribe := e.followWebsites(scriptedName, start, queueReady)
	defer unsubscribe()
	exist, available, ready := progress.exist, progress.available, progress.ready

	waitProfiles := e.startCPUProfiles(ctx, "scripted")
	defer waitProfiles()
	e.logf("%s: creating %d Websites with %s; their children, statuses and events with %d workers", scriptedName, e.n, e.cfg.load, e.cfg.operatorClient.Workers)
	// The workers go on until every Website they were given is Ready, or
	// the phase ends.
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	created := make(chan *websitev1.Website, e.n)
	workDone := make(chan workOutcome, 1)
	go func() { workDone <- w.work(phaseCtx, created, becameAvailable, e.cfg.operatorClient.Workers) }()
	res.CreateErrors, err = benchkit.ForEach(ctx, e.n, e.cfg.load.Workers, func(ctx context.Context, i int) error {
		website, err := w.website(ctx, siteName(i))
		if err == nil {
			created <- website
		}
		return err
	})
	close(created)
	if err != nil {
		res.FirstError = err.Error()
	}
	res.CreateCallsSeconds = benchkit.Round3(time.Since(start).Seconds())
	e.logf("%s: Website create calls done after %.2f s (%d errors)", scriptedName, res.CreateCallsSeconds, res.CreateErrors)
	deadline := start.Add(e.deadline)
	res.Exist = exist.wait(ctx, deadline, e.logf)
	res.Available = available.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, benchNamespace))
	res.Ready = ready.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, benchNamespace))
	e.logf("%s: children exist %s, Deployments Available %s, Websites Ready %s", scriptedName, res.Exist, res.Available, res.Ready)
	select {
	case o := <-workDone:
		res.WorkErrors = o.failures
		if o.first != nil && res.FirstError == "" {
			res.FirstError = o.first.Error()
		}
	case <-time.After(max(time.Until(deadline), 5*time.Second)):
		res.WorkErrors = -1 // the workers had not finished
	}
	res.CPUSeconds = e.recordCPU(scriptedName, cpu0)
	traffic, err := e.apiTrafficSince(ctx, before)
	if err != nil {
		return res, err
	}
	res.Writes, res.Reads, res.Watch = traffic.writes, traffic.reads, traffic.watch
	e.logf("%s: write requests by verb and resource: %s", scriptedName, strings.Join(res.Writes.Sorted(), " "))
	if c := e.res.Ceiling; c != nil {
		res.ExistRatio = ratio(res.Exist, c.Exist)
		res.ReadyRatio = ratio(res.Ready, c.Available)
	}
	return res, nil
}

type workOutcome struct {
	failures int
	first    error
}

// scriptedWriter makes the scripted phase's requests.
type scriptedWriter struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	// status writes statuses as the operator does, with its own writer.
	status *children.StatusWriter
	// sites are the phase's Websites by name, filled in as they are
	// created; not added to after the phase starts.
	sites map[string]*scriptedSite
}

// scriptedSite is what the workers share of one Website.
type scriptedSite struct {
	// website is the Website as created; set before firstStatus closes.
	website *websitev1.Website
	// firstStatus is closed once the first status is written: the Ready
	// status must come after it.
	firstStatus chan struct{}
}

// newScriptedWriter makes the writer's clients with the load client's
// settings.
func (e *env) newScriptedWriter() (*scriptedWriter, error) {
	cs, dyn, err := e.loadClients()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := websitev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(e.loadConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &scriptedWriter{cs: cs, dyn: dyn, status: children.NewStatusWriter(c), sites: map[string]*scriptedSite{}}, nil
}

// children creates w's Deployment and Service and writes its first status
// and the event. A retry finds the children that exist already.
func (s *scriptedWriter) children(ctx context.Context, w *websitev1.Website) error {
	d, svc, err := websiteChildren(w)
	if err != nil {
		return err
	}
	if _, err := s.cs.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{}); benchkit.IgnoreExists(err) != nil {
		return fmt.Errorf("create Deployment %s: %w", w.Name, err)
	}
	if _, err := s.cs.CoreV1().Services(benchNamespace).Create(ctx, svc, metav1.CreateOptions{}); benchkit.IgnoreExists(err) != nil {
		return fmt.Errorf("create Service %s: %w", w.Name, err)
	}
	if err := s.writeStatus(ctx, w, false); err != nil {
		return err
	}
	if _, err := s.cs.EventsV1().Events(benchNamespace).Create(ctx, deploymentCreatedEvent(w), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create event for %s: %w", w.Name, err)
	}
	site := s.sites[w.Name]
	site.website = w
	close(site.firstStatus)
	return nil
}

// website creates the Website name, or reads it when a retry finds it.
func (s *scriptedWriter) website(ctx context.Context, name string) (*websitev1.Website, error) {
	r := s.dyn.Resource(websitesGVR).Namespace(benchNamespace)
	u, err := r.Create(ctx, websiteObject(name), metav1.CreateOptions{})
	if benchkit.IgnoreExists(err) != nil {
		return nil, fmt.Errorf("create Website %s: %w", name, err)
	}
	if err != nil {
		if u, err = r.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("get Website %s: %w", name, err)
		}
	}
	var w websitev1.Website
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return nil, fmt.Errorf("decode Website %s: %w", name, err)
	}
	return &w, nil
}

// work runs the given number of workers until created is closed and each
// Website's Ready status is written (becameAvailable closed), or ctx ends.
// Like the operator's queue, a worker takes a Ready status before a new
// Website when both wait.
func (s *scriptedWriter) work(ctx context.Context, created <-chan *websitev1.Website, becameAvailable <-chan string, workers int) workOutcome {
	var failed benchkit.Failures
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			websites, available := created, becameAvailable
			readyFor := func(name string, ok bool) {
				if !ok {
					available = nil
					return
				}
				failed.Add(benchkit.Retried(ctx, func() error { return s.ready(ctx, name) }))
			}
			for websites != nil || available != nil {
				// A Ready status first, when one waits.
				select {
				case name, ok := <-available:
					readyFor(name, ok)
					continue
				default:
				}
				select {
				case name, ok := <-available:
					readyFor(name, ok)
				case w, ok := <-websites:
					if !ok {
						websites = nil
						continue
					}
					failed.Add(benchkit.Retried(ctx, func() error { return s.children(ctx, w) }))
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
	n, first := failed.Count()
	return workOutcome{n, first}
}

// ready writes the Ready status of the Website name, after its first.
func (s *scriptedWriter) ready(ctx context.Context, name string) error {
	site, ok := s.sites[name]
	if !ok {
		return fmt.Errorf("Deployment %s belongs to no Website of this phase", name)
	}
	select {
	case <-site.firstStatus:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.writeStatus(ctx, site.website, true)
}

// writeStatus writes the Website's status with the operator's own status
// writer: the same request, a JSON patch that replaces /status. w is the
// Website as created, without a status.
func (s *scriptedWriter) writeStatus(ctx context.Context, w *websitev1.Website, ready bool) error {
	updated := w.DeepCopy()
	updated.Status = scriptedStatus(w, ready, time.Now())
	if _, err := s.status.Patch(ctx, w, updated, w.Status, updated.Status); err != nil {
		return fmt.Errorf("write status of Website %s: %w", w.Name, err)
	}
	return nil
}

// scriptedStatus is a status like the operator's, before and after the
// Website is Ready: three conditions and the replica counts.
func scriptedStatus(w *websitev1.Website, ready bool, now time.Time) websitev1.WebsiteStatus {
	t := metav1.NewTime(now)
	condition := func(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: w.Generation, LastTransitionTime: t}
	}
	st := websitev1.WebsiteStatus{ObservedGeneration: w.Generation, Replicas: 1, Ready: "0/1", Selector: "app.kubernetes.io/instance=" + w.Name}
	if ready {
		st.ReadyReplicas, st.UpdatedReplicas, st.Ready = 1, 1, "1/1"
		st.Conditions = []metav1.Condition{
			condition(websitev1.ReadyCondition, metav1.ConditionTrue, websitev1.AvailableReason, "1 of 1 replicas ready, the Service routes to them"),
			condition(websitev1.ProgressingCondition, metav1.ConditionFalse, websitev1.RolloutCompleteReason, "Deployment "+w.Name+" is rolled out"),
			condition(websitev1.DegradedCondition, metav1.ConditionFalse, websitev1.AsExpectedReason, "Nothing is wrong"),
		}
		return st
	}
	st.Conditions = []metav1.Condition{
		condition(websitev1.ReadyCondition, metav1.ConditionFalse, websitev1.RollingOutReason, "0 of 1 replicas ready"),
		condition(websitev1.ProgressingCondition, metav1.ConditionTrue, websitev1.RollingOutReason, "Deployment "+w.Name+" is rolling out"),
		condition(websitev1.DegradedCondition, metav1.ConditionFalse, websitev1.AsExpectedReason, "Nothing is wrong"),
	}
	return st
}

// deploymentCreatedEvent is the operator's one event per new Website.
func deploymentCreatedEvent(w *websitev1.Website) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: w.Name + "." + rand.String(16), Namespace: w.Namespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: "platform-operator-bench",
		ReportingInstance:   "platform-operator-bench",
		Action:              "Create",
		Reason:              "DeploymentCreated",
		Regarding:           corev1.ObjectReference{APIVersion: websitev1.GroupVersion.String(), Kind: "Website", Namespace: w.Namespace, Name: w.Name, UID: w.UID},
		Related:             &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: w.Namespace, Name: w.Name},
		Note:                "Deployment " + w.Name + " created",
		Type:                corev1.EventTypeNormal,
	}
}
