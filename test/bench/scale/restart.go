package scale

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/test/bench/benchkit"
)

const (
	webNamespace = "bench-web"
	// restartRSSTargetMiB is issue 31's bound on the operator's peak RSS
	// with restartTargetN of each kind at once.
	restartRSSTargetMiB = 200
	restartTargetN      = 1000
	// stopBefore is how long before a scheduled time the operator is
	// stopped: the new process takes that run over.
	stopBefore = 2 * time.Second
)

// websiteResources are what the Website controller writes; the Websites'
// creates are this program's.
var websiteResources = []string{"example.com/websites-POST", "example.com/websites/status", "apps/deployments", "services"}

// restartKinds are the kinds of the platform restart, with the resources
// their controllers write.
var restartKinds = []struct {
	name, controller string
	resources        []string
}{
	{"Websites", "website", websiteResources},
	{"Tenants", "tenant", tenantResources},
	{"BackupJobs", "backupjob", backupJobResources},
}

func websiteName(i int) string { return fmt.Sprintf("site-%05d", i) }

// platformRestart is the platform-restart scenario: N Websites, N Tenants
// and N BackupJobs (snapshot target) on one operator, restarted just before
// a scheduled time.
func (r *runner) platformRestart(ctx context.Context) (*Restart, error) {
	// Pods: a Website's one replica.
	p, stop, err := r.startPhase(ctx, "platform-restart", true, r.n)
	if err != nil {
		return nil, err
	}
	defer stop()
	res := &Restart{}
	res.Nodes, _ = r.nodes(r.n)
	defer func() {
		p.op.Stop()
		res.Operator = p.op.Footprint()
	}()
	return res, p.runRestart(ctx, res)
}

func (p *phase) runRestart(ctx context.Context, res *Restart) error {
	if _, err := p.op.Start(ctx); err != nil {
		return err
	}
	for _, ns := range []string{webNamespace, backupNamespace} {
		if err := benchkit.CreateNamespace(ctx, p.cs, ns); err != nil {
			return err
		}
	}
	if err := p.createSources(ctx, backupNamespace); err != nil {
		return err
	}
	backups := newLedger(keepLast)
	stopRuns, err := p.watchRuns(ctx, snapshotTarget, backups, newLedger(0), newLedger(0))
	if err != nil {
		return err
	}
	defer stopRuns()
	ready, stopReady := p.watchReady(ctx)
	defer stopReady()

	start := time.Now()
	p.logf("platform restart: creating %d Websites, %d Tenants and %d BackupJobs", p.n, p.n, p.n)
	failed, firstErr := benchkit.ForEach(ctx, 3*p.n, p.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		switch i % 3 {
		case 0:
			return benchkit.IgnoreExists(p.cl.Create(ctx, websitetest.Website(websiteName(i/3), webNamespace)))
		case 1:
			return benchkit.IgnoreExists(p.cl.Create(ctx, tenantObject(i/3)))
		default:
			return benchkit.IgnoreExists(p.cl.Create(ctx, backupJobObject(i/3, snapshotTarget)))
		}
	})
	if failed > 0 {
		return fmt.Errorf("%d creates failed, the first: %w", failed, firstErr)
	}
	res.Ready = ready.wait(ctx, 3*p.n, start, p.logf, "platform restart")
	p.logf("platform restart: every object Ready after %.2f s (%d/%d)", res.Ready.Seconds, res.Ready.Reached, 3*p.n)
	if !res.Ready.ok() {
		return fmt.Errorf("%d of %d objects Ready", res.Ready.Reached, 3*p.n)
	}

	// The operator is down across the scheduled time across, a minute at
	// least after every BackupJob was scheduled, so that the minute before
	// is a normal run.
	across := nextMinute(time.Now(), 70*time.Second)
	times := []time.Time{across.Add(-time.Minute), across, across.Add(time.Minute)}
	res.AcrossMinute = across.UTC().Format(time.RFC3339)
	p.logf("platform restart: stopping the operator at %s, %s before the scheduled time %s", across.Add(-stopBefore).Format(time.TimeOnly), stopBefore, across.Format(time.TimeOnly))
	if err := sleepUntil(ctx, across.Add(-stopBefore)); err != nil {
		return err
	}
	before, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return err
	}
	events0, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return err
	}
	sigterm := time.Now()
	res.StopSeconds = benchkit.Round3(p.op.Stop().Seconds())
	if _, err := p.op.Start(ctx); err != nil {
		return err
	}
	res.ReadyzSeconds = benchkit.Round3(time.Since(sigterm).Seconds())
	res.Reconciled = p.reconciledAll(ctx, sigterm, map[string]int{"website": p.n, "tenant": p.n})
	// The writes judged are those to Websites, Tenants and their children:
	// the window waits for them to stop. BackupJobs write at every
	// scheduled minute, and with a thousand of them a minute's runs may
	// still be under way when the next falls due; their takeover is judged
	// by the runs below.
	var judged []string
	for _, k := range restartKinds {
		if k.controller != "backupjob" {
			judged = append(judged, k.resources...)
		}
	}
	after, settled, err := p.settle(ctx, before, judged)
	if err != nil {
		return err
	}
	res.WindowSeconds, res.Settled = benchkit.Round3(time.Since(sigterm).Seconds()), settled.Settled
	events1, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return err
	}
	writes := withoutOwnTokenRequest(after.WritesSince(before))
	res.Writes = map[string]benchkit.RequestCounts{}
	for _, k := range restartKinds {
		res.Writes[k.name] = pick(writes, k.resources)
	}
	for key, n := range events1 {
		if len(key) > len(benchkit.OperatorName) && key[:len(benchkit.OperatorName)+1] == benchkit.OperatorName+"/" {
			res.OperatorEvents += max(0, n-events0[key])
		}
	}
	if samples, err := p.op.Metrics.Scrape(ctx); err == nil {
		res.Requests = map[string]float64{}
		for _, s := range samples {
			if s.Name == "rest_client_requests_total" {
				res.Requests[s.Labels["method"]] += s.Value
			}
		}
	}
	p.logf("platform restart: stopped in %.2f s, /readyz %.2f s after SIGTERM, every Website and Tenant reconciled after %.2f s (%d/%d); writes %v; the new process's requests %v",
		res.StopSeconds, res.ReadyzSeconds, res.Reconciled.Seconds, res.Reconciled.Reached, res.Reconciled.Target, res.Writes, res.Requests)

	// The runs around the restart.
	if err := sleepUntil(ctx, times[len(times)-1].Add(windowGrace)); err != nil {
		return err
	}
	names := make([]string, p.n)
	for i := range names {
		names[i] = backupJobName(i)
	}
	runs := backups.snapshot()
	res.Runs = tally(runs, names, times)
	res.TakenOver = takenOver(runs, names, across, sigterm)
	p.logf("platform restart: runs at %s, %s and %s: %s; every BackupJob's run at %s seen %s after SIGTERM", times[0].Format(time.TimeOnly), times[1].Format(time.TimeOnly), times[2].Format(time.TimeOnly), tallyString(res.Runs), across.Format(time.TimeOnly), waitString(res.TakenOver))
	return nil
}

// watchReady marks the Websites, Tenants and BackupJobs the watch sees
// Ready, by kind and name.
func (p *phase) watchReady(ctx context.Context) (*readyWatch, func()) {
	w := &readyWatch{ready: map[string]time.Time{}}
	infCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := dynamicinformer.NewDynamicSharedInformerFactory(p.c.Dyn, 0)
	for _, gvr := range []struct{ kind, resource string }{
		{"Website", websitev1.GroupVersion.WithResource("websites").Resource},
		{"Tenant", "tenants"},
		{"BackupJob", "backupjobs"},
	} {
		group := v1alpha1.GroupVersion
		if gvr.kind == "Website" {
			group = websitev1.GroupVersion
		}
		kind := gvr.kind
		_, _ = f.ForResource(group.WithResource(gvr.resource)).Informer().AddEventHandler(handler(func(obj metav1.Object, deleted bool) {
			if u, ok := obj.(*unstructured.Unstructured); ok && !deleted && benchkit.ConditionReady(u) {
				w.mark(kind + "/" + u.GetNamespace() + "/" + u.GetName())
			}
		}))
	}
	f.Start(infCtx.Done())
	f.WaitForCacheSync(infCtx.Done())
	return w, cancel
}
