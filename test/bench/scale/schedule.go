package scale

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/test/bench/benchkit"
)

const (
	snapshotTarget = "snapshot"
	volumeTarget   = "volume"

	backupNamespace = "bench-backup"
	cronNamespace   = "bench-cron"

	// keepLast is the BackupJobs' retention.
	keepLast = 3
	// everyMinute is the schedule of every BackupJob and CronJob.
	everyMinute = "* * * * *"
	// windowGrace is how long after the window's last scheduled time its
	// runs are waited for: a run later than that counts as missed. It
	// ends the window before the next scheduled minute.
	windowGrace = 50 * time.Second
	// cronScheduledAnnotation is the CronJob controller's scheduled time
	// on each Job it makes.
	cronScheduledAnnotation = batchv1.CronJobScheduledTimestampAnnotation
)

var snapshotsGVR = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}

// backupJobResources are what the BackupJob controller writes, as the API
// server counts them; the window's writes to them are the operator's (the
// CronJob controller writes Jobs, which the watch separates).
var backupJobResources = []string{"example.com/backupjobs-POST", "example.com/backupjobs/status", "snapshot.storage.k8s.io/volumesnapshots", "persistentvolumeclaims", "batch/jobs"}

func backupJobName(i int) string { return fmt.Sprintf("bj-%05d", i) }
func cronJobName(i int) string   { return fmt.Sprintf("cj-%05d", i) }
func sourceName(i int) string    { return fmt.Sprintf("src-%05d", i) }

// schedule is the backup-schedule scenario for one target, on a fresh
// cluster with the simulation parts (a provisioner, snapshots).
func (r *runner) schedule(ctx context.Context, target string) (*Schedule, error) {
	minutesInWindow := int(r.cfg.Window / time.Minute)
	if minutesInWindow < 1 {
		return nil, fmt.Errorf("the window of %s holds no whole minute", r.cfg.Window)
	}
	// Pods: the CronJobs' Jobs and, for a volume target, the BackupJobs'
	// (each keeps 3 successful Jobs, the window makes more).
	pods := r.n * (minutesInWindow + 2)
	if target == volumeTarget {
		pods *= 2
	}
	p, stop, err := r.startPhase(ctx, "schedule-"+target, true, pods)
	if err != nil {
		return nil, err
	}
	defer stop()
	res := &Schedule{Target: target, ClusterStartSeconds: p.c.StartSeconds, Retention: Retention{KeepLast: keepLast}}
	res.Nodes, _ = r.nodes(pods)
	defer func() {
		p.op.Stop()
		res.Operator = p.op.Footprint()
	}()
	err = p.runSchedule(ctx, res, target, minutesInWindow)
	return res, err
}

func (p *phase) runSchedule(ctx context.Context, res *Schedule, target string, minutesInWindow int) error {
	if _, err := p.op.Start(ctx); err != nil {
		return err
	}
	for _, ns := range []string{backupNamespace, cronNamespace} {
		if err := benchkit.CreateNamespace(ctx, p.cs, ns); err != nil {
			return err
		}
	}
	if err := p.createSources(ctx, backupNamespace); err != nil {
		return err
	}

	// The runs, as this program's watches see them.
	backups, bjJobs, cronJobs := newLedger(keepLast), newLedger(0), newLedger(0)
	stopWatch, err := p.watchRuns(ctx, target, backups, bjJobs, cronJobs)
	if err != nil {
		return err
	}
	defer stopWatch()

	setup := time.Now()
	p.logf("schedule (%s): creating %d BackupJobs and %d CronJobs on %q", target, p.n, p.n, everyMinute)
	failed, firstErr := benchkit.ForEach(ctx, 2*p.n, p.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		if i%2 == 0 {
			return benchkit.IgnoreExists(p.cl.Create(ctx, backupJobObject(i/2, target)))
		}
		return benchkit.IgnoreExists(p.cl.Create(ctx, cronJobObject(i/2)))
	})
	if failed > 0 {
		return fmt.Errorf("%d creates failed, the first: %w", failed, firstErr)
	}
	if err := p.waitScheduled(ctx, setup); err != nil {
		return err
	}
	res.SetupSeconds = benchkit.Round3(time.Since(setup).Seconds())

	first := nextMinute(time.Now(), 10*time.Second)
	times := minutes(first, minutesInWindow)
	last := times[len(times)-1]
	for _, t := range times {
		res.Minutes = append(res.Minutes, t.UTC().Format(time.RFC3339))
	}
	p.logf("schedule (%s): every BackupJob scheduled after %.1f s; window %s to %s (+%s)", target, res.SetupSeconds, first.Format(time.TimeOnly), last.Format(time.TimeOnly), windowGrace)
	winStart, winEnd := first.Add(-2*time.Second), last.Add(windowGrace)
	if err := sleepUntil(ctx, winStart); err != nil {
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
	cpu0 := p.op.SnapshotCPU()
	for _, t := range times {
		if err := sleepUntil(ctx, t.Add(windowGrace)); err != nil {
			return err
		}
		p.logf("schedule (%s): runs scheduled at %s seen: %d BackupJobs', %d CronJobs'", target, t.Format(time.TimeOnly), backups.seenAt(t), cronJobs.seenAt(t))
	}
	after, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return err
	}
	res.CPUSeconds = p.op.SnapshotCPU().Diff(cpu0)
	res.OperatorCPUSeconds = res.CPUSeconds[benchkit.OperatorName]
	events1, err := benchkit.EventWrites(ctx, p.cs, "")
	if err != nil {
		return err
	}

	bjNames, cjNames := make([]string, p.n), make([]string, p.n)
	for i := range p.n {
		bjNames[i], cjNames[i] = backupJobName(i), cronJobName(i)
	}
	res.BackupJobs = tally(backups.snapshot(), bjNames, times)
	res.CronJobs = tally(cronJobs.snapshot(), cjNames, times)
	res.RawWrites = after.WritesSince(before)
	res.BackupWrites, res.CronWrites = writesPerRun(target, res, backups, bjJobs, cronJobs, winStart, winEnd, events1, events0)
	if res.MissedRunsInStatus, err = p.missedInStatus(ctx); err != nil {
		return err
	}
	p.logf("schedule (%s): BackupJobs: %s; CronJobs: %s", target, tallyString(res.BackupJobs), tallyString(res.CronJobs))

	// Retention, once no more runs start and its deletions stopped.
	settleFrom, err := benchkit.ScrapeAPIServer(ctx, p.cs)
	if err != nil {
		return err
	}
	if err := p.suspendAll(ctx); err != nil {
		return err
	}
	_, settled, err := p.settle(ctx, settleFrom, backupJobResources)
	if err != nil {
		return err
	}
	res.Retention = retention(backups.snapshot(), bjNames, first, minutesInWindow, winStart, winEnd, settled.Settled)
	p.logf("schedule (%s): retention: kept %v, %d deleted in the window (%v a minute), %d deleted before %d newer backups succeeded",
		target, res.Retention.Kept, res.Retention.Deleted, res.Retention.PerMinute, res.Retention.EarlyDeletions, keepLast)
	return nil
}

func tallyString(t Tally) string {
	return fmt.Sprintf("%d runs of %d due, %d missed, %d doubled, %d unexpected; lateness p50 %.3f s, p99 %.3f s, max %.3f s",
		t.Runs, t.Expected, t.Missed, t.Doubled, t.Unexpected, t.Lateness.P50, t.Lateness.P99, t.Lateness.Max)
}

// createSources makes a bound claim per BackupJob to back up.
func (p *phase) createSources(ctx context.Context, ns string) error {
	p.logf("creating %d source claims", p.n)
	failed, firstErr := benchkit.ForEach(ctx, p.n, p.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		return benchkit.IgnoreExists(p.cl.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: sourceName(i), Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}))
	})
	if failed > 0 {
		return fmt.Errorf("%d source claims not created, the first: %w", failed, firstErr)
	}
	limit := time.Now().Add(deadline(p.n))
	for {
		claims := &corev1.PersistentVolumeClaimList{}
		if err := p.cl.List(ctx, claims, client.InNamespace(ns)); err != nil {
			return err
		}
		bound := 0
		for _, c := range claims.Items {
			if c.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		if bound >= p.n {
			return nil
		}
		if time.Now().After(limit) {
			return fmt.Errorf("%d of %d source claims bound after %s", bound, p.n, deadline(p.n))
		}
		if err := sleepUntil(ctx, time.Now().Add(2*time.Second)); err != nil {
			return err
		}
	}
}

// backupJobObject is BackupJob i: every minute, keepLast 3, of source i.
func backupJobObject(i int, target string) *v1alpha1.BackupJob {
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: backupJobName(i), Namespace: backupNamespace},
		Spec: v1alpha1.BackupJobSpec{
			Schedule:  everyMinute,
			Source:    v1alpha1.BackupSource{PersistentVolumeClaimName: sourceName(i)},
			Retention: &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(keepLast))},
		},
	}
	switch target {
	case snapshotTarget:
		bj.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
	default:
		bj.Spec.Target = &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}}
		bj.Spec.JobTemplate = &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36", Command: []string{"cp", "-a", "/source/.", "/backup/"}}},
			}},
		}}
	}
	return bj
}

// cronJobObject is CronJob i: every minute, a Job of one pod, which kwok
// completes.
func cronJobObject(i int) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: cronJobName(i), Namespace: cronNamespace},
		Spec: batchv1.CronJobSpec{
			Schedule:          everyMinute,
			ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "work", Image: "busybox:1.36", Command: []string{"true"}}},
				}},
			}},
		},
	}
}

// waitScheduled waits until every BackupJob has its next run in status.
func (p *phase) waitScheduled(ctx context.Context, start time.Time) error {
	limit := start.Add(deadline(p.n))
	for {
		list := &v1alpha1.BackupJobList{}
		if err := p.cl.List(ctx, list, client.InNamespace(backupNamespace)); err != nil {
			return err
		}
		scheduled := 0
		for _, bj := range list.Items {
			if bj.Status.NextScheduleTime != nil {
				scheduled++
			}
		}
		if scheduled >= p.n {
			return nil
		}
		if time.Now().After(limit) {
			return fmt.Errorf("%d of %d BackupJobs scheduled after %s", scheduled, p.n, deadline(p.n))
		}
		if err := sleepUntil(ctx, time.Now().Add(time.Second)); err != nil {
			return err
		}
	}
}

func (p *phase) missedInStatus(ctx context.Context) (int64, error) {
	list := &v1alpha1.BackupJobList{}
	if err := p.cl.List(ctx, list, client.InNamespace(backupNamespace)); err != nil {
		return 0, err
	}
	var missed int64
	for _, bj := range list.Items {
		missed += bj.Status.MissedRuns
	}
	return missed, nil
}

// suspendAll suspends every BackupJob and CronJob, so that retention is
// counted on the window's runs alone.
func (p *phase) suspendAll(ctx context.Context) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	failed, firstErr := benchkit.ForEach(ctx, 2*p.n, p.cfg.LoadWorkers, func(ctx context.Context, i int) error {
		if i%2 == 0 {
			return p.cl.Patch(ctx, &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: backupJobName(i / 2), Namespace: backupNamespace}}, patch)
		}
		return p.cl.Patch(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: cronJobName(i / 2), Namespace: cronNamespace}}, patch)
	})
	if failed > 0 {
		return fmt.Errorf("%d not suspended, the first: %w", failed, firstErr)
	}
	return nil
}

// watchRuns feeds the ledgers from informers: the BackupJobs' backups
// (snapshots or claims) and Jobs, and the CronJobs' Jobs.
func (p *phase) watchRuns(ctx context.Context, target string, backups, bjJobs, cronJobs *ledger) (stop func(), err error) {
	infCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	factory := informers.NewSharedInformerFactory(p.cs, 0)
	jobs := factory.Batch().V1().Jobs().Informer()
	if _, err := jobs.AddEventHandler(handler(func(obj metav1.Object, deleted bool) {
		job, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		done := job.Status.Succeeded > 0
		switch {
		case job.Labels[v1alpha1.BackupJobLabel] != "":
			observeRun(bjJobs, job, job.Labels[v1alpha1.BackupJobLabel], job.Annotations[backupjob.ScheduledTimeAnnotation], done, deleted)
		case job.Annotations[cronScheduledAnnotation] != "":
			owner := ""
			if ref := metav1.GetControllerOf(job); ref != nil {
				owner = ref.Name
			}
			observeRun(cronJobs, job, owner, job.Annotations[cronScheduledAnnotation], done, deleted)
		}
	})); err != nil {
		cancel()
		return nil, err
	}
	var backupInformer cache.SharedIndexInformer
	var dynFactory dynamicinformer.DynamicSharedInformerFactory
	if target == snapshotTarget {
		dynFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.c.Dyn, 0, backupNamespace, nil)
		backupInformer = dynFactory.ForResource(snapshotsGVR).Informer()
		_, err = backupInformer.AddEventHandler(handler(func(obj metav1.Object, deleted bool) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || u.GetLabels()[v1alpha1.BackupJobLabel] == "" {
				return
			}
			ready, _, _ := unstructured.NestedBool(u.Object, "status", "readyToUse")
			observeRun(backups, u, u.GetLabels()[v1alpha1.BackupJobLabel], u.GetAnnotations()[backupjob.ScheduledTimeAnnotation], ready, deleted)
		}))
	} else {
		backupInformer = factory.Core().V1().PersistentVolumeClaims().Informer()
		_, err = backupInformer.AddEventHandler(handler(func(obj metav1.Object, deleted bool) {
			if obj.GetLabels()[v1alpha1.BackupJobLabel] == "" {
				return
			}
			observeRun(backups, obj, obj.GetLabels()[v1alpha1.BackupJobLabel], obj.GetAnnotations()[backupjob.ScheduledTimeAnnotation],
				obj.GetLabels()[backupjob.ResultLabel] == string(v1alpha1.BackupSucceeded), deleted)
		}))
	}
	if err != nil {
		cancel()
		return nil, err
	}
	factory.Start(infCtx.Done())
	if dynFactory != nil {
		dynFactory.Start(infCtx.Done())
		dynFactory.WaitForCacheSync(infCtx.Done())
	}
	factory.WaitForCacheSync(infCtx.Done())
	return cancel, nil
}

// handler calls f with every object an informer adds, updates or deletes.
func handler(f func(obj metav1.Object, deleted bool)) cache.ResourceEventHandler {
	publish := func(obj any, deleted bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = tomb.Obj, true
		}
		if m, ok := obj.(metav1.Object); ok {
			f(m, deleted)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { publish(obj, false) },
		UpdateFunc: func(_, obj any) { publish(obj, false) },
		DeleteFunc: func(obj any) { publish(obj, true) },
	}
}

// observeRun records an event of a run's object in l.
func observeRun(l *ledger, obj metav1.Object, owner, scheduled string, succeeded, deleted bool) {
	at, err := time.Parse(time.RFC3339, scheduled)
	if err != nil {
		return
	}
	l.observe(obj.GetNamespace()+"/"+obj.GetName(), owner, at, obj.GetCreationTimestamp().Time, succeeded, deleted || obj.GetDeletionTimestamp() != nil, time.Now())
}

// writesPerRun divides each side's writes in the window by its runs: the
// objects the watch saw created and deleted, the status writes the API
// server counted (only the operator writes backupjobs/status, only the
// CronJob controller cronjobs/status), claim patches (the operator's; the
// volume binder updates claims with PUT), and the events each controller
// reported.
func writesPerRun(target string, res *Schedule, backups, bjJobs, cronJobs *ledger, from, to time.Time, events1, events0 map[string]int) (bj, cj WritesPerRun) {
	kind := "VolumeSnapshot"
	if target == volumeTarget {
		kind = "PersistentVolumeClaim"
	}
	created, deleted := countWindow(backups.snapshot(), from, to)
	jobsCreated, jobsDeleted := countWindow(bjJobs.snapshot(), from, to)
	bj = WritesPerRun{Runs: res.BackupJobs.Runs, ByKind: map[string]float64{}, How: map[string]string{}}
	add := func(w *WritesPerRun, name string, v float64, how string) {
		if v == 0 && !strings.HasPrefix(name, "create") {
			return
		}
		w.ByKind[name] = v
		w.How[name] = how
	}
	add(&bj, "create "+kind, float64(created), "watch")
	add(&bj, "delete "+kind+" (retention)", float64(deleted), "watch")
	if target == volumeTarget {
		add(&bj, "create Job", float64(jobsCreated), "watch")
		add(&bj, "delete Job (history)", float64(jobsDeleted), "watch")
		add(&bj, "patch PersistentVolumeClaim", res.RawWrites.Verb("PATCH", "persistentvolumeclaims"), "API server (PATCH)")
	}
	add(&bj, "status", res.RawWrites.Sum("example.com/backupjobs/status"), "API server")
	add(&bj, "update BackupJob", res.RawWrites.Sum("example.com/backupjobs", "POST"), "API server")
	add(&bj, "events", float64(eventsOf(events1, events0, benchkit.OperatorName+"/BackupJob")), "events")
	cjCreated, cjDeleted := countWindow(cronJobs.snapshot(), from, to)
	cj = WritesPerRun{Runs: res.CronJobs.Runs, ByKind: map[string]float64{}, How: map[string]string{}}
	add(&cj, "create Job", float64(cjCreated), "watch")
	add(&cj, "delete Job (history)", float64(cjDeleted), "watch")
	add(&cj, "status", res.RawWrites.Sum("batch/cronjobs/status"), "API server")
	add(&cj, "events", float64(eventsOf(events1, events0, "cronjob-controller/CronJob")), "events")
	for _, w := range []*WritesPerRun{&bj, &cj} {
		for k, v := range w.ByKind {
			if w.Runs > 0 {
				w.ByKind[k] = benchkit.Round3(v / float64(w.Runs))
				w.Total += v
			}
		}
		if w.Runs > 0 {
			w.Total = benchkit.Round3(w.Total / float64(w.Runs))
		}
	}
	return bj, cj
}

func eventsOf(after, before map[string]int, key string) int {
	return max(0, after[key]-before[key])
}

// countWindow counts the runs first seen, and first seen deleted, within
// [from, to].
func countWindow(runs []run, from, to time.Time) (created, deleted int) {
	in := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && !t.After(to) }
	for _, r := range runs {
		if in(r.Seen) {
			created++
		}
		if in(r.Deleted) {
			deleted++
		}
	}
	return created, deleted
}

// retention counts what keepLast left of each BackupJob's backups, and the
// deletions of the window by minute.
func retention(runs []run, owners []string, first time.Time, minutesInWindow int, from, to time.Time, settled bool) Retention {
	r := Retention{KeepLast: keepLast, Kept: map[int]int{}, PerMinute: make([]int, minutesInWindow), Settled: settled}
	kept := map[string]int{}
	for _, o := range owners {
		kept[o] = 0
	}
	for _, run := range runs {
		if run.Deleted.IsZero() {
			kept[run.Owner]++
		} else if !run.Deleted.Before(from) && !run.Deleted.After(to) {
			r.Deleted++
			if m := int(run.Deleted.Sub(first) / time.Minute); m >= 0 && m < minutesInWindow {
				r.PerMinute[m]++
			}
		}
		if run.EarlyDeletion {
			r.EarlyDeletions++
		}
	}
	for _, n := range kept {
		r.Kept[n]++
	}
	return r
}
