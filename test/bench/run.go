package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

// runN runs the chosen scenarios for one N: the services probe, the
// ceilings and the scripted client, each on a fresh cluster of its own,
// then, on another, the operator's burst, which creates the Websites that
// cost, restart and drift work on.
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
	label := fmt.Sprintf("N=%d", n)
	if cfg.round != "" {
		label += " " + cfg.round
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%s %6.1fs] %s\n", label, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	e := &env{cfg: cfg, n: n, deadline: deadline, res: res, logf: logf, stopInformers: func() {},
		logDir: filepath.Join(cfg.logDir, fmt.Sprintf("n%d", n))}
	res.Footprint.CPUSeconds = map[string]map[string]float64{}
	res.Footprint.SampleEvery = "200ms"
	// The extra rounds of the ceiling and the burst come first, each on
	// clusters of its own; this run is the last round.
	var extra []roundResult
	if cfg.rounds > 1 && cfg.scenarios["burst"] && (cfg.scenarios["ceiling"] || cfg.scenarios[kopfScenario]) {
		extra = extraRounds(ctx, cfg, n)
	}
	// Registered first, so it runs last: a panic is recorded, after every
	// other deferred clean-up has run, and the next N still runs.
	defer func() {
		if r := recover(); r != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			logf("PANIC: %v", r)
		}
		if extra != nil {
			res.Rounds = summarizeRounds(extra, res)
			addRoundErrors(res, extra)
		}
		res.Finished = time.Now()
	}()
	fail := func(err error) *runResult {
		res.Errors = append(res.Errors, err.Error())
		logf("ERROR: %v", err)
		return res
	}

	// Each phase that measures starts from the same state: a fresh cluster
	// of its own, rather than the remains of the earlier phases (thousands
	// of deleted objects in etcd, the control plane's caches and queues)
	// and the wait for their namespace's deletion.
	bare := []struct {
		name string
		run  func(context.Context) error
	}{
		{"services", func(ctx context.Context) (err error) {
			res.Services, err = e.serviceProbe(ctx)
			return err
		}},
		{"ceiling (Deployments alone)", func(ctx context.Context) (err error) {
			res.CeilingDeployments, err = e.ceiling(ctx, false)
			return err
		}},
		{"ceiling", func(ctx context.Context) (err error) {
			res.Ceiling, err = e.ceiling(ctx, true)
			return err
		}},
		{"scripted", func(ctx context.Context) (err error) {
			res.Scripted, err = e.scripted(ctx)
			return err
		}},
	}
	for _, p := range bare {
		scenario, _, _ := strings.Cut(p.name, " ")
		if !cfg.scenarios[scenario] || (cfg.round != "" && p.name != "ceiling" && p.name != "scripted") {
			// An extra round compares the burst with the ceiling of
			// Deployments and Services and the scripted client only.
			continue
		}
		stop, err := e.startCluster(ctx, p.name)
		if err != nil {
			return fail(err)
		}
		err = p.run(ctx)
		stop()
		if err != nil {
			return fail(fmt.Errorf("%s: %w", p.name, err))
		}
	}
	if !cfg.scenarios["burst"] {
		return res
	}
	// The kopf peer runs on a fresh cluster of its own, before the
	// operator's burst in odd rounds and after it (and the scenarios that
	// follow the burst) in even ones, so that neither side always goes
	// first on a machine whose pace drifts.
	runKopf := func() {
		stop, err := e.startCluster(ctx, "the kopf peer")
		if err != nil {
			fail(err)
			return
		}
		res.Kopf, err = e.kopfPeer(ctx)
		stop()
		if err != nil {
			fail(fmt.Errorf("kopf: %w", err))
		}
	}
	if cfg.scenarios[kopfScenario] {
		if cfg.roundNumber%2 == 1 {
			runKopf()
		} else {
			defer runKopf()
		}
	}

	stop, err := e.startCluster(ctx, "the operator")
	if err != nil {
		return fail(err)
	}
	defer stop()
	e.sampler = benchkit.StartRSSSampler(200 * time.Millisecond)
	defer e.sampler.Close()
	defer e.stopOperator()
	defer func() { e.stopInformers() }()

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"burst", e.operatorBurst},
		{"cost", e.idle},
		{"restart", e.restart},
		{"drift", e.drift},
	}
	for _, s := range steps {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		if !cfg.scenarios[s.name] {
			continue
		}
		if err := s.run(ctx); err != nil {
			return fail(fmt.Errorf("%s: %w", s.name, err))
		}
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return res
}

// startCluster starts a fresh local cluster for the phases named by
// purpose, bare: the manifests and the operator come with the operator's
// burst. stop checks the cluster's health and stops it.
func (e *env) startCluster(ctx context.Context, purpose string) (stop func(), err error) {
	e.logf("starting a local cluster for %s: %d kwok node(s) of %d pods", purpose, e.res.Nodes, e.res.NodePods)
	c, err := benchkit.StartCluster(ctx, benchkit.ClusterOptions{
		Repo:      e.cfg.repo,
		Operator:  e.cfg.operator,
		LogDir:    e.logDir,
		Manifests: []string{},
		Nodes:     e.res.Nodes,
		NodePods:  e.res.NodePods,
		Logf:      e.logf,
	})
	if err != nil {
		return nil, err
	}
	devEnv := c.Environment
	e.devEnv, e.cluster, e.admin, e.applier, e.dyn = devEnv, devEnv.Cluster, devEnv.Clientset, devEnv.Applier, c.Dyn
	e.res.ClusterStartSeconds = max(e.res.ClusterStartSeconds, c.StartSeconds)
	return func() {
		// Were pods marked not ready anywhere?
		if err := e.podsMarkedNotReady(context.WithoutCancel(ctx), "")(); err != nil {
			e.logf("cluster health: %v", err)
		}
		e.logf("stopping the cluster")
		devEnv.Stop()
	}, nil
}
