package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/test/bench/benchkit"
)

// burstStart is what the cost scenario needs of the burst: when it began
// and the counters at that moment.
type burstStart struct {
	at       time.Time
	apiStart benchkit.RequestCounts
	opStart  []benchkit.Sample
}

// operatorBurst installs deploy/, starts the operator, creates N Websites
// at once with the load client and measures how long until their children
// exist and they are Ready.
func (e *env) operatorBurst(ctx context.Context) error {
	endPhase := e.phase("burst: operator")
	var endOnce sync.Once
	end := func() { endOnce.Do(endPhase) }
	defer end()
	res := &burstResult{Client: e.cfg.load}
	e.res.Burst = res
	if _, err := e.applier.ApplyPaths(ctx, filepath.Join(e.cfg.repo, "deploy")); err != nil {
		return err
	}
	took, err := e.startOperator(ctx)
	if err != nil {
		return err
	}
	res.OperatorStartSeconds = benchkit.Round3(took.Seconds())
	e.logf("operator ready after %.2f s (pid %d)", took.Seconds(), e.op.PID())
	if err := e.createNamespace(ctx, benchNamespace); err != nil {
		return err
	}
	e.startInformers(ctx)
	_, dyn, err := e.loadClients()
	if err != nil {
		return err
	}
	opBefore, err := e.endpoint.WaitScrape(ctx, 30*time.Second)
	if err != nil {
		return err
	}

	cpu0 := e.snapshotCPU()
	before, err := e.scrapeAPICounters(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	e.burstStart = &burstStart{at: start, apiStart: before.requests, opStart: opBefore}
	progress, unsubscribe := e.followWebsites("operator", start, nil)
	defer unsubscribe()
	deployments, exist, available, ready := progress.deployments, progress.exist, progress.available, progress.ready
	waitProfiles := e.startCPUProfiles(ctx, "burst")
	defer waitProfiles()
	e.logf("operator: creating %d Websites with %s; the operator has %s", e.n, e.cfg.load, e.cfg.operatorClient)
	res.CreateErrors, res.FirstError = e.createWebsites(ctx, dyn)
	res.CreateCallsSeconds = benchkit.Round3(time.Since(start).Seconds())
	e.logf("operator: create calls done after %.2f s (%d errors)", res.CreateCallsSeconds, res.CreateErrors)
	deadline := start.Add(e.deadline)
	res.DeploymentsExist = deployments.wait(ctx, deadline, e.logf)
	res.Exist = exist.wait(ctx, deadline, e.logf)
	e.logf("operator: all children exist: %s", res.Exist)
	res.Ready = ready.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, benchNamespace))
	e.logf("operator: all Websites Ready: %s", res.Ready)
	if res.ReadyLag = ready.lagBehind(available); res.ReadyLag != nil {
		e.logf("operator: Ready after the Deployment was available: p50 %.3f s, p99 %.3f s, max %.3f s (%d Websites)",
			res.ReadyLag.P50, res.ReadyLag.P99, res.ReadyLag.Max, res.ReadyLag.Samples)
	}
	res.CPUSeconds = e.recordCPU("operator burst", cpu0)
	if traffic, err := e.apiTrafficSince(ctx, before); err == nil {
		res.Writes, res.Reads, res.Watch = traffic.writes, traffic.reads, traffic.watch
		e.logf("operator: write requests by verb and resource: %s", strings.Join(res.Writes.Sorted(), " "))
		e.logf("operator: read requests by verb and resource: %s", strings.Join(res.Reads.Sorted(), " "))
	}
	if c := e.res.Ceiling; c != nil {
		res.ExistRatio = ratio(res.Exist, c.Exist)
		res.ReadyRatio = ratio(res.Ready, c.Available)
	}
	if s := e.res.Scripted; s != nil {
		res.ScriptedExistRatio = ratio(res.Exist, s.Exist)
		res.ScriptedReadyRatio = ratio(res.Ready, s.Ready)
	}
	if c := e.res.CeilingDeployments; c != nil {
		res.DeploymentsRatio = ratio(res.DeploymentsExist, c.DeploymentsExist)
	}
	end()
	if opAfter, err := e.endpoint.WaitScrape(ctx, 10*time.Second); err == nil {
		res.Operator = summarizeOperator(opAfter)
	}
	if e.cfg.heapProfile {
		e.saveHeapProfile(ctx)
	}
	e.logf("operator: children exist %s, Ready %s (operator ÷ ceiling: exist %s, Ready ÷ Available %s, Deployments ÷ Deployments alone %s)",
		res.Exist, res.Ready, ratioStr(res.ExistRatio), ratioStr(res.ReadyRatio), ratioStr(res.DeploymentsRatio))
	return nil
}

// websiteProgress is how far the N Websites of a phase are, as the
// benchmark's own watches see them.
type websiteProgress struct {
	// deployments counts the Deployments that exist, exist the
	// Deployments and Services, available the Deployments Available, ready
	// the Websites Ready. A Website's Deployment and Service have its name.
	deployments, exist, available, ready *progress
}

// followWebsites marks the progress of a phase's N Websites from the
// benchmark's watches, from start, until unsubscribe is called; it calls
// onAvailable, when not nil, once for each Deployment, when it is first
// seen Available, from the one goroutine of the Deployments' watch.
func (e *env) followWebsites(who string, start time.Time, onAvailable func(name string)) (p *websiteProgress, unsubscribe func()) {
	p = &websiteProgress{
		deployments: newProgress(who+": Deployments exist", e.n, start),
		exist:       newProgress(who+": Deployments and Services exist", 2*e.n, start),
		available:   newProgress(who+": Deployments available", e.n, start),
		ready:       newProgress(who+": Websites Ready", e.n, start),
	}
	unsub := []func(){
		e.deploymentHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev == deleted {
				return
			}
			p.deployments.mark(obj.GetName())
			p.exist.mark("deployment/" + obj.GetName())
			if d, ok := obj.(*appsv1.Deployment); ok && deploymentAvailable(d) && p.available.mark(d.Name) && onAvailable != nil {
				onAvailable(d.Name)
			}
		}),
		e.serviceHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev != deleted {
				p.exist.mark("service/" + obj.GetName())
			}
		}),
		e.websiteHub.subscribe(func(obj metav1.Object, ev eventType) {
			if ev != deleted && websiteReady(obj) {
				p.ready.mark(obj.GetName())
			}
		}),
	}
	return p, func() {
		for _, u := range unsub {
			u()
		}
	}
}

func ratio(op, ceiling waitResult) *float64 {
	if !op.ok() || !ceiling.ok() || ceiling.Seconds <= 0 {
		return nil
	}
	r := benchkit.Round3(op.Seconds / ceiling.Seconds)
	return &r
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

// websiteObject is the tutorial's Website, as websitetest builds it.
func websiteObject(name string) *unstructured.Unstructured {
	w := websitetest.Website(name, benchNamespace)
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
