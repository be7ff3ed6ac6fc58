package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	websitev1 "example.com/platform-operator/api/v1"
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
	cs, dyn, err := e.loadClients()
	if err != nil {
		return nil, err
	}

	cpu0 := e.snapshotCPU()
	before, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	w := &scriptedWriter{cs: cs, dyn: dyn, first: map[string]chan struct{}{}}
	for i := range e.n {
		w.first[siteName(i)] = make(chan struct{})
	}
	// Deployments seen Available, for the second status write: each once,
	// and the channel closed after the last.
	becameAvailable := make(chan string, e.n)
	var queued sync.Map
	var sent atomic.Int64
	queueReady := func(name string) {
		if _, seen := queued.LoadOrStore(name, true); seen {
			return
		}
		becameAvailable <- name
		if sent.Add(1) == int64(e.n) {
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
	res.CreateErrors, err = forEach(ctx, e.n, e.cfg.load.Workers, func(ctx context.Context, i int) error {
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
	res.CreateCallsSeconds = round3(time.Since(start).Seconds())
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
	after, err := scrapeAPIServer(ctx, e.admin)
	if err != nil {
		return res, err
	}
	res.Writes, res.Reads = after.writesSince(before), after.readsSince(before)
	e.logf("%s: write requests by verb and resource: %s", scriptedName, strings.Join(res.Writes.sorted(), " "))
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
	// first is closed, per Website, once its first status is written: the
	// Ready status must come after it.
	first map[string]chan struct{}
}

// children creates w's Deployment and Service and writes its first status
// and the event. A retry finds the children that exist already.
func (s *scriptedWriter) children(ctx context.Context, w *websitev1.Website) error {
	d, svc, err := websiteChildren(w)
	if err != nil {
		return err
	}
	if _, err := s.cs.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create Deployment %s: %w", w.Name, err)
	}
	if _, err := s.cs.CoreV1().Services(benchNamespace).Create(ctx, svc, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create Service %s: %w", w.Name, err)
	}
	if err := s.writeStatus(ctx, w, false); err != nil {
		return err
	}
	if _, err := s.cs.EventsV1().Events(benchNamespace).Create(ctx, deploymentCreatedEvent(w), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create event for %s: %w", w.Name, err)
	}
	close(s.first[w.Name])
	return nil
}

// website creates the Website name, or reads it when a retry finds it.
func (s *scriptedWriter) website(ctx context.Context, name string) (*websitev1.Website, error) {
	r := s.dyn.Resource(websitesGVR).Namespace(benchNamespace)
	u, err := r.Create(ctx, websiteObject(name), metav1.CreateOptions{})
	if ignoreExists(err) != nil {
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
	var failures atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	retry := func(step func() error) {
		var err error
		for attempt := range 5 {
			if err = step(); err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
		if err != nil {
			failures.Add(1)
			once.Do(func() { first = err })
		}
	}
	for range workers {
		wg.Go(func() {
			websites, available := created, becameAvailable
			readyFor := func(name string, ok bool) {
				if !ok {
					available = nil
					return
				}
				retry(func() error { return s.ready(ctx, name) })
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
					retry(func() error { return s.children(ctx, w) })
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
	return workOutcome{int(failures.Load()), first}
}

// ready writes the Ready status of the Website name, after its first.
func (s *scriptedWriter) ready(ctx context.Context, name string) error {
	first, ok := s.first[name]
	if !ok {
		return fmt.Errorf("Deployment %s belongs to no Website of this phase", name)
	}
	select {
	case <-first:
	case <-ctx.Done():
		return ctx.Err()
	}
	// A new Website's generation is 1; status writes do not change it.
	w := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, Generation: 1}}
	return s.writeStatus(ctx, w, true)
}

// writeStatus replaces the Website's status, as the operator does: a JSON
// patch that adds /status.
func (s *scriptedWriter) writeStatus(ctx context.Context, w *websitev1.Website, ready bool) error {
	data, err := json.Marshal(scriptedStatus(w, ready, time.Now()))
	if err != nil {
		return err
	}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": json.RawMessage(data)}})
	if err != nil {
		return err
	}
	if _, err := s.dyn.Resource(websitesGVR).Namespace(benchNamespace).Patch(ctx, w.Name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
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
