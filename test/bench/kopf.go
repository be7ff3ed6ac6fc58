package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"example.com/platform-operator/test/bench/benchkit"
)

// kopfScenario is the tutorial's kopf operator doing this operator's work
// per Website (test/bench/peer/kopf_full.py), on a fresh cluster of its
// own, in every round: issue 33's peer. It runs when -peer-kopf names a
// kopf installation, set up outside the repository as docs/performance.md
// says; kopf's code is never part of it.
const kopfScenario = "kopf"

// kopfPhase names the kopf peer's phase in the CPU tables.
const kopfPhase = "kopf peer"

// kopfHandlers is the kopf operator's code, relative to the repository.
const kopfHandlers = "test/bench/peer/kopf_full.py"

// kopfResult is one run of the kopf operator: the same N Websites created
// by the same load client as in the operator's burst.
type kopfResult struct {
	// StartSeconds is from starting kopf until it served: its liveness
	// endpoint answered and it made the probe Website's Deployment.
	StartSeconds       float64 `json:"startSeconds"`
	CreateCallsSeconds float64 `json:"createCallsSeconds"`
	CreateErrors       int     `json:"createErrors"`
	FirstError         string  `json:"firstError,omitempty"`
	// Exist is until every Deployment and Service existed, Available
	// until every Deployment was Available: kopf's Websites have no Ready
	// condition.
	Exist     waitResult `json:"childrenExist"`
	Available waitResult `json:"available"`
	// CPUSeconds is the kopf process's, from the first create until every
	// Deployment was Available; HWMMiB its peak RSS (VmHWM) then.
	CPUSeconds float64 `json:"cpuSeconds"`
	HWMMiB     float64 `json:"hwmMiB"`
	// Writes, Reads and Watch are the API server's, by every client, from
	// the first create until every Deployment was Available.
	Writes benchkit.RequestCounts `json:"writes"`
	Reads  benchkit.RequestCounts `json:"reads"`
	Watch  *benchkit.WatchTraffic `json:"watchTraffic,omitempty"`
}

// kopfPeer runs the kopf operator on the current cluster and creates the
// N Websites for it.
func (e *env) kopfPeer(ctx context.Context) (*kopfResult, error) {
	defer e.phase("kopf")()
	res := &kopfResult{}
	if _, err := e.applier.ApplyPaths(ctx, filepath.Join(e.cfg.repo, "deploy")); err != nil {
		return nil, err
	}
	if err := e.createNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	e.startInformers(ctx)
	defer e.stopInformers()
	_, dyn, err := e.loadClients()
	if err != nil {
		return nil, err
	}
	addr, err := benchkit.FreeLocalAddress()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(e.logDir, "kopf.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	liveness := "http://" + addr + "/healthz"
	cmd := exec.Command(filepath.Join(e.cfg.peerKopf, "bin", "kopf"), "run", filepath.Join(e.cfg.repo, kopfHandlers),
		"--standalone", "--all-namespaces", "--liveness", liveness)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kopf: %w", err)
	}
	// exited is closed when kopf has ended, with waitErr set: every wait
	// below, and the stop, can watch it.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	ended := func() error { return fmt.Errorf("kopf ended (%v); its log is %s", waitErr, log.Name()) }
	if err := waitLive(ctx, liveness, exited, ended, time.Minute); err != nil {
		return nil, fmt.Errorf("kopf (log in %s): %w", log.Name(), err)
	}
	// Live is not yet watching: kopf is ready once it has made the
	// Deployment of a Website created in a namespace of its own, as the
	// operator is once its caches are synced.
	if err := e.kopfServes(ctx, dyn, exited, ended); err != nil {
		return nil, fmt.Errorf("kopf (log in %s): %w", log.Name(), err)
	}
	res.StartSeconds = benchkit.Round3(time.Since(started).Seconds())
	e.logf("kopf serving after %.2f s (pid %d)", res.StartSeconds, cmd.Process.Pid)

	pid := cmd.Process.Pid
	cpu0, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	cluster0 := e.snapshotCPU()
	before, err := e.scrapeAPICounters(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	progress, unsubscribe := e.followWebsites(kopfScenario, start, nil)
	defer unsubscribe()
	waitProfiles := e.startCPUProfiles(ctx, kopfScenario)
	defer waitProfiles()
	e.logf("kopf: creating %d Websites with %s", e.n, e.cfg.load)
	res.CreateErrors, res.FirstError = e.createWebsites(ctx, dyn)
	res.CreateCallsSeconds = benchkit.Round3(time.Since(start).Seconds())
	deadline := start.Add(e.deadline)
	res.Exist = progress.exist.wait(ctx, deadline, e.logf)
	res.Available = progress.available.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, benchNamespace))
	cpu1, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return res, fmt.Errorf("kopf's CPU: %w", err)
	}
	res.CPUSeconds = benchkit.Round3(cpu1 - cpu0)
	e.recordCPU(kopfPhase, cluster0)[kopfScenario] = res.CPUSeconds
	if _, hwm, err := benchkit.MemoryKiB(pid); err == nil {
		res.HWMMiB = benchkit.Round3(float64(hwm) / 1024)
	}
	if traffic, err := e.apiTrafficSince(ctx, before); err == nil {
		res.Writes, res.Reads, res.Watch = traffic.writes, traffic.reads, traffic.watch
		e.logf("kopf: write requests by verb and resource: %s", strings.Join(res.Writes.Sorted(), " "))
	}
	e.logf("kopf: children exist %s, Deployments Available %s; CPU %.1f s, VmHWM %.1f MiB", res.Exist, res.Available, res.CPUSeconds, res.HWMMiB)
	return res, nil
}

// kopfProbeNamespace holds the Website that tells when kopf serves, out
// of the benchmark's namespace and its watches.
const kopfProbeNamespace = "kopf-probe"

// kopfServes creates a Website in kopfProbeNamespace and waits, a minute
// at most, until kopf has made its Deployment.
func (e *env) kopfServes(ctx context.Context, dyn dynamic.Interface, exited <-chan struct{}, ended func() error) error {
	if err := e.createNamespace(ctx, kopfProbeNamespace); err != nil {
		return err
	}
	probe := websiteObject("probe")
	probe.SetNamespace(kopfProbeNamespace)
	if _, err := dyn.Resource(websitesGVR).Namespace(kopfProbeNamespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the probe Website: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := e.admin.AppsV1().Deployments(kopfProbeNamespace).Get(ctx, "probe", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("read the probe Website's Deployment: %w", err)
		}
		select {
		case <-exited:
			return ended()
		case <-ctx.Done():
			return errors.New("made no Deployment for the probe Website within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitLive waits until url answers 200, the process ends (exited is
// closed: ended says how) or timeout passes.
func waitLive(ctx context.Context, url string, exited <-chan struct{}, ended func() error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return ended()
		case <-ctx.Done():
			return errors.New("not live within " + timeout.String())
		case <-tick.C:
		}
	}
}
