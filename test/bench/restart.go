package main

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"example.com/platform-operator/test/bench/benchkit"
)

// createAndWaitReady creates a Website and waits until it is Ready.
func (e *env) createAndWaitReady(ctx context.Context, name string) (waitResult, error) {
	start := time.Now()
	p := newProgress("Website "+name+" Ready", 1, start)
	defer e.websiteHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted && obj.GetName() == name && websiteReady(obj) {
			p.mark(name)
		}
	})()
	if _, err := e.dyn.Resource(websitesGVR).Namespace(benchNamespace).Create(ctx, websiteObject(name), metav1.CreateOptions{}); err != nil {
		return waitResult{}, err
	}
	return p.wait(ctx, start.Add(2*time.Minute), e.logf), nil
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
	before, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	stopStart := time.Now()
	e.stopOperator()
	res.StopSeconds = benchkit.Round3(time.Since(stopStart).Seconds())
	// --verbose: the new process logs every status write with the
	// Website's name, so that each write can be attributed.
	took, err := e.startOperator(ctx, "--verbose")
	if err != nil {
		return err
	}
	res.ReadyzSeconds = benchkit.Round3(took.Seconds())
	res.ReadyzFromStopSeconds = benchkit.Round3(time.Since(stopStart).Seconds())
	e.logf("restart: stopped in %.2f s; new process ready %.2f s after its start", res.StopSeconds, res.ReadyzSeconds)
	if res.NewWebsiteReady, err = e.createAndWaitReady(ctx, probe); err != nil {
		return err
	}
	e.logf("restart: new Website Ready %s after its creation", res.NewWebsiteReady)

	// Wait for the new process to have been through every Website.
	res.InitialPass = waitResult{Target: e.n + 1}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, max(0, e.deadline-time.Since(stopStart)), true, func(ctx context.Context) (bool, error) {
		samples, err := e.endpoint.Scrape(ctx)
		if err != nil {
			return false, nil // the next scrape may answer
		}
		st := summarizeOperator(samples)
		res.InitialPass.Reached = int(st.Reconciles)
		return st.Reconciles >= float64(e.n+1) && st.QueueDepth == 0, nil
	})
	switch {
	case ctx.Err() != nil:
		res.InitialPass.Interrupted = true
		return ctx.Err()
	case err != nil:
		res.InitialPass.TimedOut = true
	}
	res.InitialPass.Seconds = benchkit.Round3(time.Since(stopStart).Seconds())
	e.logf("restart: initial pass: %s", res.InitialPass)
	after, settled, err := e.settle(ctx, before)
	if err != nil {
		return err
	}
	res.Settle = settled
	res.WindowSeconds = benchkit.Round3(time.Since(stopStart).Seconds())
	e.recordCPU("restart", cpu0)
	// The new process's counters start at zero: all its requests so far.
	if samples, err := e.endpoint.Scrape(ctx); err != nil {
		e.logf("restart: the new process's metrics: %v", err)
	} else {
		st := summarizeOperator(samples)
		res.OperatorClientRequests, res.ChildReads = st.Requests, st.ChildReads
	}
	res.WindowRaw = after.WritesSince(before)
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
	e.logf("restart: writes in the window %s; the new Website's own %s; the restart's own %g (existing Websites: %d changes seen, %d events); the new process's requests by method %v, its reads of children past the cache %v",
		writesStr(res.Window), writesStr(res.NewWebsiteOwn), res.Total, res.ExistingStatusChanges, res.OperatorEvents, res.OperatorClientRequests, res.ChildReads)
	return nil
}
