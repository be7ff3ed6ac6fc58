package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
)

func init() {
	utilruntime.Must(backupjob.AddToScheme(scheme))
}

// backupTimeout bounds each wait: runs come every 10 s, and a run's claim
// binds, its pod is scheduled and completes within a few seconds.
const backupTimeout = 90 * time.Second

// TestBackupJob runs the BackupJob end to end on a cluster of its own: the
// shared one has no storage, and BackupJobs need the local cluster's
// simulation parts (a provisioner for the StorageClass "local", the
// VolumeSnapshot CRDs and their simulator, failing pods on request). The
// operator runs from deploy/ (base and the backupjob component) with its
// ServiceAccount's token, so a missing RBAC rule fails these tests. The
// cases run in parallel, each in its own namespace, on @every 10s
// schedules, after the one that stops and starts the operator.
func TestBackupJob(t *testing.T) {
	e := startOwnEnvironment(t, devenv.EnvironmentOptions{
		Components:   []string{"backupjob"},
		OperatorArgs: backupOperatorArgs,
		// Two nodes: a copy must go to the node of the pod that uses its
		// source.
		Cluster: localcluster.Options{Simulations: true, Nodes: 2, Logf: t.Logf},
	})

	// First, alone: it stops the operator, which the others need running.
	// The parallel cases start once it has ended.
	t.Run("catch-up after the operator was stopped", func(t *testing.T) { testCatchUpAfterOperatorStopped(t, e) })

	t.Run("volume runs and retention", func(t *testing.T) { t.Parallel(); testBackupRunsAndRetention(t, e) })
	t.Run("failed run", func(t *testing.T) { t.Parallel(); testFailedRunKeepsVolume(t, e) })
	t.Run("snapshot target", func(t *testing.T) { t.Parallel(); testSnapshotTarget(t, e) })
	t.Run("deletion keeps backups", func(t *testing.T) { t.Parallel(); testDeletionKeepsBackups(t, e) })
	t.Run("restore drill", func(t *testing.T) { t.Parallel(); testRestoreDrill(t, e) })
	t.Run("failed restore drill", func(t *testing.T) { t.Parallel(); testFailedRestoreDrill(t, e) })
	t.Run("forbid with a slow run", func(t *testing.T) { t.Parallel(); testForbidWithSlowRun(t, e) })
	t.Run("copy on the source's node", func(t *testing.T) { t.Parallel(); testCopyOnTheSourcesNode(t, e) })
}

// backupOperatorArgs are the flags of TestBackupJob's operator, also when
// a case starts it again.
var backupOperatorArgs = []string{"--all-namespaces", "--verbose"}

// backupNamespace makes a namespace with a bound source claim "data".
func backupNamespace(t *testing.T, e *environment) string {
	t.Helper()
	g := NewWithT(t)
	ns := fmt.Sprintf("e2e-backup-%d", namespaceCounter.Add(1))
	g.Expect(e.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(e.Client.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
		},
	})).To(Succeed())
	return ns
}

// copyTemplate is a Job template whose container copies /source to
// /backup; fail makes the local cluster fail its pod.
func copyTemplate(fail bool) *v1alpha1.BackupJobTemplate {
	t := &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To(int32(0)),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36", Command: []string{"cp", "-a", "/source/.", "/backup/"}}},
		}},
	}}
	if fail {
		t.Spec.Template.Annotations = map[string]string{localcluster.SimulationFailAnnotation: "true"}
	}
	return t
}

func newBackupJob(t *testing.T, e *environment, ns string, mutate func(*v1alpha1.BackupJob)) *v1alpha1.BackupJob {
	t.Helper()
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "data-backup", Namespace: ns},
		Spec: v1alpha1.BackupJobSpec{
			Schedule:    "@every 10s",
			Source:      v1alpha1.BackupSource{PersistentVolumeClaimName: "data"},
			JobTemplate: copyTemplate(false),
		},
	}
	if mutate != nil {
		mutate(bj)
	}
	if err := e.Client.Create(t.Context(), bj); err != nil {
		t.Fatal(err)
	}
	return bj
}

func getBackupJob(g Gomega, ctx context.Context, e *environment, bj *v1alpha1.BackupJob) *v1alpha1.BackupJob {
	got := &v1alpha1.BackupJob{}
	g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(bj), got)).To(Succeed())
	return got
}

// backupClaims are the BackupJob's backup claims that are not being
// deleted, by name.
func backupClaims(g Gomega, ctx context.Context, e *environment, ns string) map[string]corev1.PersistentVolumeClaim {
	list := &corev1.PersistentVolumeClaimList{}
	g.Expect(e.Client.List(ctx, list, client.InNamespace(ns), client.HasLabels{backupjob.RunLabel})).To(Succeed())
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.Name] = c
		}
	}
	return out
}

func condition(bj *v1alpha1.BackupJob, conditionType string) metav1.Condition {
	if c := meta.FindStatusCondition(bj.Status.Conditions, conditionType); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// A run makes a claim that binds and a Job that completes; with keepLast 2,
// once more runs succeeded, exactly the backups the policy keeps are left
// and the others were deleted, with an event each.
func testBackupRunsAndRetention(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	claims := watchDeletedClaims(t, e, ns)
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(2)), KeepFailed: ptr.To(int32(1))}
	})

	// The first run: a bound claim, a completed Job, a Succeeded backup.
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.Backups).NotTo(BeEmpty())
		first := got.Status.Backups[len(got.Status.Backups)-1]
		g.Expect(first.Result).To(Equal(v1alpha1.BackupSucceeded))
		g.Expect(first.Size).NotTo(BeNil())
		g.Expect(first.Size.String()).To(Equal("2Gi"))
		claim := backupClaims(g, ctx, e, ns)[first.Name]
		g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))
		job := &batchv1.Job{}
		g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: first.Name}, job)).To(Succeed())
		g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
		g.Expect(condition(got, v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())

	// After four successful runs, two backups are left: the two newest
	// successful ones, besides at most one run in progress.
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		// Backups being deleted are listed without keptBy until they
		// are gone.
		var succeeded, kept []string
		for _, b := range got.Status.Backups {
			if len(b.KeptBy) == 0 {
				continue
			}
			kept = append(kept, b.Name)
			if b.Result == v1alpha1.BackupSucceeded {
				succeeded = append(succeeded, b.Name)
			}
		}
		g.Expect(succeeded).To(HaveLen(2))
		// Each backup deleted has its event, naming it, and no other
		// backup has one.
		deleted, err := claims.result()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(deleted)).To(BeNumerically(">=", 2), "four runs or more, two kept")
		var named []string
		for _, note := range backupJobEvents(g, ctx, e, bj)["BackupDeleted"] {
			name, _, _ := strings.Cut(strings.TrimPrefix(note, "PersistentVolumeClaim "), " ")
			named = append(named, name)
		}
		g.Expect(named).To(ConsistOf(deleted), "the BackupDeleted events, one per deleted backup")
		var finished []string
		for name, c := range backupClaims(g, ctx, e, ns) {
			if c.Labels[backupjob.ResultLabel] != "" {
				finished = append(finished, name)
			}
		}
		slices.Sort(finished)
		slices.Sort(kept)
		g.Expect(finished).To(Equal(kept), "the finished backup claims are exactly those status lists as kept")
		g.Expect(condition(got, v1alpha1.BackupJobRetentionAppliedCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2 * backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// claimWatch follows a namespace's backup claims from before they exist,
// and records those whose deletion started, once each.
type claimWatch struct {
	mu      sync.Mutex
	deleted []string
	err     error
}

func watchDeletedClaims(t *testing.T, e *environment, ns string) *claimWatch {
	t.Helper()
	w, err := e.Clientset.CoreV1().PersistentVolumeClaims(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: backupjob.RunLabel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	cw := &claimWatch{}
	go func() {
		for ev := range w.ResultChan() {
			cw.mu.Lock()
			claim, ok := ev.Object.(*corev1.PersistentVolumeClaim)
			switch {
			case ev.Type == watch.Error || !ok:
				cw.err = fmt.Errorf("watch of claims: %v", apierrors.FromObject(ev.Object))
			case (ev.Type == watch.Deleted || claim.DeletionTimestamp != nil) && !slices.Contains(cw.deleted, claim.Name):
				cw.deleted = append(cw.deleted, claim.Name)
			}
			cw.mu.Unlock()
		}
		cw.mu.Lock()
		if cw.err == nil && t.Context().Err() == nil {
			cw.err = errors.New("the watch of claims ended early")
		}
		cw.mu.Unlock()
	}()
	return cw
}

func (cw *claimWatch) result() ([]string, error) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return slices.Clone(cw.deleted), cw.err
}

// A failed run keeps its volume (keepFailed 1) and sets LastRunSucceeded
// and Ready to False; of several failed runs only the newest one's volume
// is kept.
func testFailedRunKeepsVolume(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) { bj.Spec.JobTemplate = copyTemplate(true) })
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		last := condition(got, v1alpha1.BackupJobLastRunSucceededCondition)
		g.Expect(last.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(last.Reason).To(Equal(v1alpha1.BackupJobJobFailedReason))
		g.Expect(condition(got, v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobLastRunFailedReason))
		failed := 0
		for name, c := range backupClaims(g, ctx, e, ns) {
			if c.Labels[backupjob.ResultLabel] == string(v1alpha1.BackupFailed) {
				failed++
				g.Expect(c.Status.Phase).To(Equal(corev1.ClaimBound), name)
			}
		}
		g.Expect(failed).To(Equal(1))
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.LastScheduleTime.Time).To(BeTemporally(">", got.CreationTimestamp.Add(15*time.Second)), "a second run has failed too")
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// A snapshot target takes a VolumeSnapshot per run, which the simulator
// makes ready; the backup is listed with its restore size.
func testSnapshotTarget(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
		bj.Spec.JobTemplate = nil
	})
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.Backups).NotTo(BeEmpty())
		b := got.Status.Backups[len(got.Status.Backups)-1]
		g.Expect(b.Kind).To(Equal(v1alpha1.SnapshotBackup))
		g.Expect(b.Result).To(Equal(v1alpha1.BackupSucceeded))
		g.Expect(b.Size).NotTo(BeNil())
		s := &snapshotv1.VolumeSnapshot{}
		g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Name}, s)).To(Succeed())
		g.Expect(s.Labels).To(HaveKeyWithValue(v1alpha1.BackupJobLabel, bj.Name))
		g.Expect(s.OwnerReferences).To(BeEmpty())
		g.Expect(condition(got, v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// Deleting a BackupJob with the default deletionPolicy Retain keeps its
// backups, labelled and without an owner; its Jobs go with it.
func testDeletionKeepsBackups(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	bj := newBackupJob(t, e, ns, nil)
	var backup string
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.Backups).NotTo(BeEmpty())
		b := got.Status.Backups[len(got.Status.Backups)-1]
		g.Expect(b.Result).To(Equal(v1alpha1.BackupSucceeded))
		backup = b.Name
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())

	g.Expect(e.Client.Delete(ctx, bj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKeyFromObject(bj), &v1alpha1.BackupJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		jobs := &batchv1.JobList{}
		g.Expect(e.Client.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty(), "the garbage collector deletes the runs' Jobs")
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		claim, ok := backupClaims(g, ctx, e, ns)[backup]
		g.Expect(ok).To(BeTrue(), "backup %s is kept", backup)
		g.Expect(claim.OwnerReferences).To(BeEmpty())
		g.Expect(claim.Labels).To(HaveKeyWithValue(v1alpha1.BackupJobLabel, bj.Name))
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

// A restore drill after each successful backup: a claim restored from the
// backup, the verify Job run on it, the result on the backup and in the
// Verified condition, the drill's claim removed afterwards.
func testRestoreDrill(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Schedule = "@every 30s"
		bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, JobTemplate: &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "verify", Image: "busybox:1.36", Command: []string{"test", "-s", "/backup/data"}}},
			}},
		}}}
	})
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		verified := condition(got, v1alpha1.BackupJobVerifiedCondition)
		g.Expect(verified.Status).To(Equal(metav1.ConditionTrue), verified.Message)
		g.Expect(got.Status.Backups).NotTo(BeEmpty())
		g.Expect(got.Status.Backups[len(got.Status.Backups)-1].Verified).To(Equal(v1alpha1.VerificationPassed))
		list := &corev1.PersistentVolumeClaimList{}
		g.Expect(e.Client.List(ctx, list, client.InNamespace(ns), client.HasLabels{backupjob.DrillLabel})).To(Succeed())
		for _, c := range list.Items {
			g.Expect(c.DeletionTimestamp).NotTo(BeNil(), "the drill's claim %s is removed", c.Name)
		}
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// The operator stopped across several scheduled times starts exactly one
// catch-up run when it is back, for the most recent of them, and counts
// the others in status.missedRuns, with a MissedRuns event: the README's
// example, @every 10s, the operator stopped after a run and down while at
// least three more scheduled times pass. How many pass depends on how fast
// the stop and the start are on the machine: the test reads it from the
// times, and asserts the order of what happened rather than a deadline.
func testCatchUpAfterOperatorStopped(t *testing.T, e *environment) {
	const period = 10 * time.Second
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.StartingDeadlineSeconds = ptr.To(int64(300))
		// Nothing is pruned while the test looks: every run that started
		// still has its backup.
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(20))}
	})

	// A run that has finished.
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.MissedRuns).To(BeZero())
		g.Expect(got.Status.Backups).NotTo(BeEmpty())
		g.Expect(got.Status.Backups[0].Name).To(Equal(backupjob.RunName(bj.Name, got.Status.LastScheduleTime.Time)))
		g.Expect(got.Status.Backups[0].Result).To(Equal(v1alpha1.BackupSucceeded))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())

	g.Expect(e.operator().Stop(20 * time.Second)).To(Succeed())
	stopped := time.Now()
	restarted := false
	defer func() {
		// The other cases need an operator, whatever happened here.
		if !restarted {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := e.StartOperator(rctx, backupOperatorArgs...); err != nil {
				t.Errorf("start the operator again: %v", err)
			}
		}
	}()
	// The last run the operator started before it stopped: the status may
	// have been read before it.
	last := getBackupJob(g, ctx, e, bj).Status.LastScheduleTime.Time
	for _, at := range runTimes(g, ctx, e, ns) {
		if at.After(last) {
			last = at
		}
	}
	// The outage itself, not a wait for a result: the times last+10 s,
	// +20 s and +30 s pass while the operator is down.
	time.Sleep(time.Until(last.Add(35 * time.Second)))
	starting := time.Now()
	_, err := e.StartOperator(ctx, backupOperatorArgs...)
	restarted = true
	g.Expect(err).NotTo(HaveOccurred())
	// The most recent scheduled time when the operator started: a run it
	// starts later is for this time or a later one.
	latestAtStart := last.Add(starting.Sub(last).Truncate(period))
	t.Logf("Operator stopped at %s (last run %s), starting again at %s, ready at %s",
		stamp(stopped), stamp(last), stamp(starting), stamp(time.Now()))

	// The catch-up run: the first run after last, listed in status.
	var catchUp time.Time
	g.Eventually(func(g Gomega) {
		catchUp = time.Time{}
		for _, at := range runTimes(g, ctx, e, ns) {
			if at.After(last) && (catchUp.IsZero() || at.Before(catchUp)) {
				catchUp = at
			}
		}
		g.Expect(catchUp.IsZero()).To(BeFalse(), "a run after %s", stamp(last))
		names := []string{}
		for _, b := range getBackupJob(g, ctx, e, bj).Status.Backups {
			names = append(names, b.Name)
		}
		g.Expect(names).To(ContainElement(backupjob.RunName(bj.Name, catchUp)))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())

	// For the most recent of the times that passed, and the times before it
	// missed: at least the three of the outage.
	g.Expect(catchUp).To(BeTemporally(">=", latestAtStart), "the catch-up run is for the most recent scheduled time")
	g.Expect(catchUp.Sub(last)%period).To(BeZero(), "a scheduled time")
	missed := int64(catchUp.Sub(last)/period) - 1
	g.Expect(missed).To(BeNumerically(">=", 2), "the outage spanned at least 3 scheduled times")
	events := backupJobEvents(g, ctx, e, bj)
	for at := last.Add(period); at.Before(catchUp); at = at.Add(period) {
		g.Expect(events["RunStarted"]).NotTo(ContainElement(ContainSubstring(backupjob.RunName(bj.Name, at)+" ")),
			"no run for a missed time")
	}
	g.Expect(events["RunStarted"]).To(ContainElement(ContainSubstring(backupjob.RunName(bj.Name, catchUp) + " ")))
	g.Expect(events["MissedRuns"]).To(ContainElement(HavePrefix(fmt.Sprintf("%d scheduled run(s) missed, the latest due at %s ",
		missed, stamp(catchUp.Add(-period))))), "the MissedRuns event of the catch-up")
	// Counted in status: what the MissedRuns events told, the catch-up's
	// and any that a busy machine made the operator miss since.
	g.Eventually(func(g Gomega) {
		var told int64
		for _, note := range backupJobEvents(g, ctx, e, bj)["MissedRuns"] {
			var n int64
			_, err := fmt.Sscanf(note, "%d scheduled run(s) missed", &n)
			g.Expect(err).NotTo(HaveOccurred(), note)
			told += n
		}
		g.Expect(getBackupJob(g, ctx, e, bj).Status.MissedRuns).To(Equal(told))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// runTimes are the scheduled times of the runs whose backup claims exist in
// ns.
func runTimes(g Gomega, ctx context.Context, e *environment, ns string) []time.Time {
	var out []time.Time
	for name, c := range backupClaims(g, ctx, e, ns) {
		at, err := time.Parse(time.RFC3339, c.Annotations[backupjob.ScheduledTimeAnnotation])
		g.Expect(err).NotTo(HaveOccurred(), "claim %s", name)
		out = append(out, at)
	}
	return out
}

// backupJobEvents are the notes of the events about bj, by reason.
func backupJobEvents(g Gomega, ctx context.Context, e *environment, bj *v1alpha1.BackupJob) map[string][]string {
	return eventsAbout(g, ctx, e, "BackupJob", bj.Namespace, bj.Name)
}

// eventsAbout are the notes of the events about the object kind ns/name,
// by reason.
func eventsAbout(g Gomega, ctx context.Context, e *environment, kind, ns, name string) map[string][]string {
	list := &eventsv1.EventList{}
	g.Expect(e.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string][]string{}
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out[ev.Reason] = append(out[ev.Reason], ev.Note)
		}
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// With concurrencyPolicy Forbid, a run that takes longer than the schedule
// period holds the next ones back: there is never more than one unfinished
// Job of the BackupJob, and once the slow run has ended one run starts,
// for the most recent time that passed, and the times before it count as
// missed.
//
// On the local cluster containers do not run (kwok completes a Job's pod
// as soon as it runs), so the slow run is a pod that cannot be scheduled
// until the test labels the nodes as its nodeSelector asks: a run that is
// pending counts as running, as the README says.
func testForbidWithSlowRun(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	jobs := watchJobs(t, e, ns)
	nodeLabel := "e2e.example.com/" + ns
	t.Cleanup(func() { labelNodes(t, e, nodeLabel, nil) })
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.ConcurrencyPolicy = v1alpha1.ForbidConcurrent
		bj.Spec.JobTemplate.Spec.Template.Spec.NodeSelector = map[string]string{nodeLabel: "true"}
	})

	// The first run starts and stays pending.
	var first time.Time
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		first = got.Status.LastScheduleTime.Time
		g.Expect(got.Status.Active).To(HaveLen(1))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
	slow := backupjob.RunName(bj.Name, first)

	// For three more periods it holds the others back: one Job, still
	// active, and the schedule does not move past it.
	g.Consistently(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.LastScheduleTime.Time).To(BeTemporally("==", first))
		g.Expect(got.Status.Active).To(ConsistOf(HaveField("Name", slow)))
		g.Expect(got.Status.MissedRuns).To(BeZero(), "held back is not missed yet")
		list := &batchv1.JobList{}
		g.Expect(e.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(ConsistOf(HaveField("Name", slow)))
	}).WithTimeout(time.Until(first.Add(32 * time.Second))).WithPolling(time.Second).Should(Succeed())

	// The slow run ends; one run starts, for the most recent time that
	// passed, and completes.
	labelNodes(t, e, nodeLabel, ptr.To("true"))
	var deferred v1alpha1.Backup
	var missed int64
	g.Eventually(func(g Gomega) {
		created, _, err := jobs.result()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(len(created)).To(BeNumerically(">=", 2))
		got := getBackupJob(g, ctx, e, bj)
		backups := map[string]v1alpha1.Backup{}
		for _, b := range got.Status.Backups {
			backups[b.Name] = b
		}
		g.Expect(backups).To(HaveKeyWithValue(slow, HaveField("Result", v1alpha1.BackupSucceeded)))
		g.Expect(backups).To(HaveKeyWithValue(created[1], HaveField("Result", v1alpha1.BackupSucceeded)))
		deferred, missed = backups[created[1]], got.Status.MissedRuns
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())

	at := deferred.ScheduledTime.Time
	g.Expect(at).To(BeTemporally(">=", first.Add(30*time.Second)), "the run is for a time after the three held back")
	g.Expect(missed).To(Equal(int64(at.Sub(first)/(10*time.Second))-1), "the times held back before it are missed")
	g.Expect(backupJobEvents(g, ctx, e, bj)["MissedRuns"]).To(ContainElement(HavePrefix(fmt.Sprintf("%d scheduled run(s) missed, the latest due at %s ", missed, stamp(at.Add(-10*time.Second))))))
	created, maxActive, err := jobs.result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created[:2]).To(Equal([]string{slow, backupjob.RunName(bj.Name, at)}), "the first Jobs created, in order")
	for held := first.Add(10 * time.Second); held.Before(at); held = held.Add(10 * time.Second) {
		g.Expect(created).NotTo(ContainElement(backupjob.RunName(bj.Name, held)), "no run for a time held back")
	}
	g.Expect(maxActive).To(Equal(1), "the most unfinished Jobs at once")
}

// jobWatch follows a namespace's Jobs from before they exist, and records
// which were created, in order, and the most that were unfinished at once.
type jobWatch struct {
	mu        sync.Mutex
	created   []string
	active    map[string]bool
	maxActive int
	err       error
}

func watchJobs(t *testing.T, e *environment, ns string) *jobWatch {
	t.Helper()
	w, err := e.Clientset.BatchV1().Jobs(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	jw := &jobWatch{active: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			jw.mu.Lock()
			job, ok := ev.Object.(*batchv1.Job)
			switch {
			case ev.Type == watch.Error || !ok:
				jw.err = fmt.Errorf("watch of Jobs: %v", apierrors.FromObject(ev.Object))
			case ev.Type == watch.Deleted || job.DeletionTimestamp != nil || jobFinished(job):
				delete(jw.active, job.Name)
			default:
				if ev.Type == watch.Added {
					jw.created = append(jw.created, job.Name)
				}
				jw.active[job.Name] = true
				jw.maxActive = max(jw.maxActive, len(jw.active))
			}
			jw.mu.Unlock()
		}
		jw.mu.Lock()
		if jw.err == nil && t.Context().Err() == nil {
			jw.err = errors.New("the watch of Jobs ended early")
		}
		jw.mu.Unlock()
	}()
	return jw
}

func (jw *jobWatch) result() (created []string, maxActive int, err error) {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	return slices.Clone(jw.created), jw.maxActive, jw.err
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// labelNodes sets label key on every node to value, or removes it when
// value is nil.
func labelNodes(t *testing.T, e *environment, key string, value *string) {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := e.Client.List(context.WithoutCancel(t.Context()), nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		if value == nil {
			delete(n.Labels, key)
		} else {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[key] = *value
		}
		if err := e.Client.Patch(context.WithoutCancel(t.Context()), n, patch); err != nil {
			t.Errorf("label node %s: %v", n.Name, err)
		}
	}
}

// A restore drill whose verify Job fails sets Verified to False, naming the
// backup and the drill, records the result on the backup, and removes the
// drill's claim and Job as a passing drill does; the backup itself stays.
func testFailedRestoreDrill(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	verify := copyTemplate(true)
	verify.Spec.Template.Spec.Containers = []corev1.Container{{Name: "verify", Image: "busybox:1.36", Command: []string{"test", "-s", "/backup/data"}}}
	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Schedule = "@every 30s"
		bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, JobTemplate: verify}
	})
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		verified := condition(got, v1alpha1.BackupJobVerifiedCondition)
		g.Expect(verified.Status).To(Equal(metav1.ConditionFalse), verified.Message)
		g.Expect(verified.Reason).To(Equal(v1alpha1.BackupJobVerifyFailedReason))

		// The condition reports the newest backup with a drill result.
		var drilled *v1alpha1.Backup
		for i, b := range got.Status.Backups {
			if b.Verified == v1alpha1.VerificationPassed || b.Verified == v1alpha1.VerificationFailed {
				drilled = &got.Status.Backups[i]
				break
			}
		}
		g.Expect(drilled).NotTo(BeNil())
		g.Expect(drilled.Verified).To(Equal(v1alpha1.VerificationFailed))
		g.Expect(drilled.Result).To(Equal(v1alpha1.BackupSucceeded), "a failed drill does not change the backup's result")
		drill := backupjob.DrillName(bj.Name, drilled.ScheduledTime.Time)
		g.Expect(verified.Message).To(ContainSubstring("backup "+drilled.Name), "names the backup")
		g.Expect(verified.Message).To(ContainSubstring(drill), "names the drill's Job")

		// The backup keeps the result; the drill's claim and Job are gone.
		claim, ok := backupClaims(g, ctx, e, ns)[drilled.Name]
		g.Expect(ok).To(BeTrue(), "backup %s stays", drilled.Name)
		g.Expect(claim.Annotations).To(HaveKeyWithValue(backupjob.VerifiedAnnotation, string(v1alpha1.VerificationFailed)))
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: drill}, &corev1.PersistentVolumeClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the drill's claim %s is removed (%v)", drill, err)
		err = e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: drill}, &batchv1.Job{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the drill's Job %s is removed (%v)", drill, err)
		g.Expect(backupJobEvents(g, ctx, e, bj)["DrillFailed"]).To(ContainElement(ContainSubstring(drilled.Name)))
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// A ReadWriteOnce source that a running pod on the second node mounts is
// copied by a pod on that node, where the volume is attached: anywhere else
// it would wait on a Multi-Attach error.
func testCopyOnTheSourcesNode(t *testing.T, e *environment) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := backupNamespace(t, e)
	const node = "kwok-node-1"
	app := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: corev1.PodSpec{
		NodeName:   node,
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	g.Expect(e.Client.Create(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(app.Status.Phase).To(Equal(corev1.PodRunning))
	}).WithTimeout(backupTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())

	bj := newBackupJob(t, e, ns, func(bj *v1alpha1.BackupJob) { bj.Spec.Schedule = "@daily"; bj.Spec.RunNow = "pinned" })
	g.Eventually(func(g Gomega) {
		got := getBackupJob(g, ctx, e, bj)
		g.Expect(got.Status.Backups).To(HaveLen(1))
		g.Expect(got.Status.Backups[0].Result).To(Equal(v1alpha1.BackupSucceeded))
		run := client.MatchingLabels{backupjob.RunLabel: got.Status.Backups[0].Name}
		// The scheduler could place the copy on kwok-node-1 by chance:
		// the Job itself must require that node.
		jobs := &batchv1.JobList{}
		g.Expect(e.Client.List(ctx, jobs, client.InNamespace(ns), run)).To(Succeed())
		g.Expect(jobs.Items).To(HaveLen(1))
		g.Expect(requiredNodeNames(jobs.Items[0].Spec.Template.Spec.Affinity)).To(ConsistOf(node), "the copy Job's required node affinity")
		pods := &corev1.PodList{}
		g.Expect(e.Client.List(ctx, pods, client.InNamespace(ns), run)).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty())
		for _, p := range pods.Items {
			g.Expect(p.Spec.NodeName).To(Equal(node), "pod %s of the copy", p.Name)
		}
	}).WithTimeout(backupTimeout).WithPolling(time.Second).Should(Succeed())
}

// requiredNodeNames are the node names that every required node-affinity
// term of a pod restricts it to, through metadata.name fields.
func requiredNodeNames(a *corev1.Affinity) []string {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var names []string
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn {
				names = append(names, f.Values...)
			}
		}
	}
	return names
}
