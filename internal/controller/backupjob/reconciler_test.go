package backupjob_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/internal/testgen"
)

var namespaceCounter atomic.Int32

// fixture is one test's namespace with a source claim and a BackupJob
// scheduled @every 10s, and a reconciler whose fake clock starts at the
// BackupJob's creation.
type fixture struct {
	t     *testing.T
	g     Gomega
	ns    string
	bj    *v1alpha1.BackupJob
	r     *backupjob.Reconciler
	clock *clocktesting.FakeClock
	// created is the BackupJob's creation time: @every counts from it.
	created time.Time
}

type bjOption func(*v1alpha1.BackupJob)

func newFixture(t *testing.T, snapshotsServed bool, opts ...bjOption) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an API server (envtest)")
	}
	g := NewWithT(t)
	ns := fmt.Sprintf("bj-%d", namespaceCounter.Add(1))
	g.Expect(k8sClient.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(k8sClient.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})).To(Succeed())
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: v1alpha1.BackupJobSpec{
			Schedule: "@every 10s",
			Source:   v1alpha1.BackupSource{PersistentVolumeClaimName: "data"},
			JobTemplate: &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36", Command: []string{"cp", "-a", "/source/.", "/backup/"}}},
			}}}},
		},
	}
	for _, o := range opts {
		o(bj)
	}
	g.Expect(k8sClient.Create(t.Context(), bj)).To(Succeed())
	r, clock := newReconciler(bj.CreationTimestamp.Time, snapshotsServed)
	return &fixture{t: t, g: g, ns: ns, bj: bj, r: r, clock: clock, created: bj.CreationTimestamp.Time}
}

// recordEvents makes the reconciler's events readable from the channel
// returned.
func (f *fixture) recordEvents() chan string {
	recorder := events.NewFakeRecorder(100)
	f.r.Recorder = recorder
	return recorder.Events
}

// drain returns the events recorded so far.
func drain(events chan string) []string {
	var out []string
	for {
		select {
		case e := <-events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// at sets the clock to the BackupJob's creation plus d and reconciles.
func (f *fixture) at(d time.Duration) ctrl.Result {
	f.t.Helper()
	f.clock.SetTime(f.created.Add(d))
	return f.reconcile()
}

func (f *fixture) reconcile() ctrl.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: f.ns, Name: f.bj.Name}})
	f.g.Expect(err).NotTo(HaveOccurred())
	return res
}

func (f *fixture) get() *v1alpha1.BackupJob {
	f.t.Helper()
	bj := &v1alpha1.BackupJob{}
	f.g.Expect(k8sClient.Get(f.t.Context(), client.ObjectKeyFromObject(f.bj), bj)).To(Succeed())
	return bj
}

// runName is the name of the run scheduled d after the creation.
func (f *fixture) runName(d time.Duration) string {
	return backupjob.RunName(f.bj.Name, f.created.Add(d))
}

func (f *fixture) jobs() []batchv1.Job {
	f.t.Helper()
	list := &batchv1.JobList{}
	f.g.Expect(k8sClient.List(f.t.Context(), list, client.InNamespace(f.ns))).To(Succeed())
	return list.Items
}

func (f *fixture) claims() map[string]corev1.PersistentVolumeClaim {
	f.t.Helper()
	list := &corev1.PersistentVolumeClaimList{}
	f.g.Expect(k8sClient.List(f.t.Context(), list, client.InNamespace(f.ns), client.HasLabels{backupjob.RunLabel})).To(Succeed())
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range list.Items {
		out[c.Name] = c
	}
	return out
}

// liveClaims are the backup claims not being deleted.
func (f *fixture) liveClaims() []string {
	var names []string
	for name, c := range f.claims() {
		if c.DeletionTimestamp == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func (f *fixture) unfinishedJobs() []string {
	var names []string
	for _, j := range f.jobs() {
		if !finished(&j) {
			names = append(names, j.Name)
		}
	}
	return names
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finishJob writes the status the Job controller would write when the Job
// of run name succeeded or failed.
func (f *fixture) finishJob(name string, succeeded bool) {
	f.t.Helper()
	job := &batchv1.Job{}
	f.g.Expect(k8sClient.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, job)).To(Succeed())
	now := metav1.Now()
	job.Status.StartTime = &now
	if succeeded {
		job.Status.CompletionTime = &now
		job.Status.Succeeded = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		}
	}
	f.g.Expect(k8sClient.Status().Update(f.t.Context(), job)).To(Succeed())
}

func (f *fixture) condition(conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(f.get().Status.Conditions, conditionType)
}

// A run starts at each scheduled time, not before, with a claim and a Job
// named after its time; reconciling again at the same time starts nothing.
func TestRunsStartAtTheirScheduledTimes(t *testing.T) {
	f := newFixture(t, false)
	res := f.at(5 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	f.g.Expect(res.RequeueAfter).To(BeNumerically("~", 5*time.Second, 100*time.Millisecond))
	f.g.Expect(f.get().Status.NextScheduleTime.Time).To(BeTemporally("==", f.created.Add(10*time.Second).Truncate(time.Second)))

	f.at(10 * time.Second)
	first := f.runName(10 * time.Second)
	f.g.Expect(f.unfinishedJobs()).To(Equal([]string{first}))
	f.g.Expect(f.liveClaims()).To(Equal([]string{first}))
	f.reconcile()
	f.g.Expect(f.jobs()).To(HaveLen(1))

	status := f.get().Status
	f.g.Expect(status.LastScheduleTime.Time).To(BeTemporally("==", f.created.Add(10*time.Second).Truncate(time.Second)))
	f.g.Expect(status.Active).To(HaveLen(1))
	f.g.Expect(status.MissedRuns).To(BeZero())
	f.g.Expect(status.Backups).To(HaveLen(1))
	f.g.Expect(status.Backups[0].Result).To(Equal(v1alpha1.BackupRunning))
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobRunningReason))

	// The run's Job mounts the source read-only and the new claim, and
	// carries the run's labels and the BackupJob as its owner; the claim
	// has the labels and no owner.
	job := &batchv1.Job{}
	f.g.Expect(k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: first}, job)).To(Succeed())
	f.g.Expect(job.Labels).To(HaveKeyWithValue(v1alpha1.BackupJobLabel, "nightly"))
	f.g.Expect(job.Labels).To(HaveKeyWithValue(backupjob.RunLabel, first))
	f.g.Expect(job.OwnerReferences).To(HaveLen(1))
	f.g.Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "data")))
	claim := f.claims()[first]
	f.g.Expect(claim.OwnerReferences).To(BeEmpty())
	f.g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))

	f.finishJob(first, true)
	f.at(12 * time.Second)
	status = f.get().Status
	f.g.Expect(status.Backups[0].Result).To(Equal(v1alpha1.BackupSucceeded))
	f.g.Expect(status.LastSuccessfulTime).NotTo(BeNil())
	f.g.Expect(f.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobScheduledReason))
	f.g.Expect(f.claims()[first].Labels).To(HaveKeyWithValue(backupjob.ResultLabel, "Succeeded"))
}

// After an outage across four scheduled times, exactly one catch-up run
// starts, for the latest, and the three before it are counted as missed,
// once: reconciling again does not count them again.
func TestExactlyOneCatchUpAfterAnOutage(t *testing.T) {
	f := newFixture(t, false)
	events := f.recordEvents()
	f.at(45 * time.Second)
	f.g.Expect(f.unfinishedJobs()).To(Equal([]string{f.runName(40 * time.Second)}))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(3)))
	f.g.Expect(drain(events)).To(ContainElement(HavePrefix(
		"Warning MissedRuns 3 scheduled run(s) missed, the latest due at " + stamp(f.created.Add(30*time.Second)) + " ")))
	f.reconcile()
	f.g.Expect(f.jobs()).To(HaveLen(1))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(3)))
	f.g.Expect(drain(events)).NotTo(ContainElement(ContainSubstring("MissedRuns")), "counted once")
}

// With startingDeadlineSeconds, a catch-up later than the deadline is not
// started: all the times are missed.
func TestNoCatchUpPastTheStartingDeadline(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.StartingDeadlineSeconds = ptr.To(int64(3)) })
	events := f.recordEvents()
	f.at(45 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	status := f.get().Status
	f.g.Expect(status.MissedRuns).To(Equal(int64(4)))
	f.g.Expect(drain(events)).To(ContainElement(HavePrefix(
		"Warning MissedRuns 4 scheduled run(s) missed, the latest due at " + stamp(f.created.Add(40*time.Second)) + " ")))
	f.g.Expect(status.LastMissedTime).NotTo(BeNil())
	f.at(50 * time.Second)
	f.g.Expect(f.jobs()).To(HaveLen(1))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(4)))
}

// Forbid never has two unfinished Jobs: a run due while another runs waits,
// and starts (late) once the other finished.
func TestForbidNeverRunsTwoJobs(t *testing.T) {
	f := newFixture(t, false)
	events := f.recordEvents()
	f.at(10 * time.Second)
	for _, d := range []time.Duration{20, 25, 30} {
		f.at(d * time.Second)
		f.g.Expect(f.unfinishedJobs()).To(HaveLen(1), "at +%ds", d)
	}
	f.finishJob(f.runName(10*time.Second), true)
	f.at(31 * time.Second)
	f.g.Expect(f.unfinishedJobs()).To(Equal([]string{f.runName(30 * time.Second)}))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(1)), "the run at +20s was held back and then superseded")
	f.g.Expect(drain(events)).To(ContainElement(HavePrefix(
		"Warning MissedRuns 1 scheduled run(s) missed, the latest due at " + stamp(f.created.Add(20*time.Second)) + " ")))
}

// Replace stops the running run: its Job is deleted, its backup marked
// Failed (Replaced) and kept per keepFailed; the new run starts.
func TestReplaceStopsTheRunningRun(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.ConcurrencyPolicy = v1alpha1.ReplaceConcurrent })
	f.at(10 * time.Second)
	f.at(20 * time.Second)
	f.g.Expect(f.unfinishedJobs()).To(Equal([]string{f.runName(20 * time.Second)}))
	claims := f.claims()
	f.g.Expect(claims).To(HaveKey(f.runName(10 * time.Second)))
	f.g.Expect(claims[f.runName(10*time.Second)].Labels).To(HaveKeyWithValue(backupjob.ResultLabel, "Failed"))
	c := f.condition(v1alpha1.BackupJobLastRunSucceededCondition)
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobReplacedReason))
}

// A failed run keeps its claim (keepFailed 1) and sets LastRunSucceeded and
// Ready to False; the schedule goes on.
func TestFailedRunKeepsItsVolume(t *testing.T) {
	f := newFixture(t, false)
	f.at(10 * time.Second)
	f.finishJob(f.runName(10*time.Second), false)
	f.at(11 * time.Second)
	f.g.Expect(f.liveClaims()).To(Equal([]string{f.runName(10 * time.Second)}))
	last := f.condition(v1alpha1.BackupJobLastRunSucceededCondition)
	f.g.Expect(last.Status).To(Equal(metav1.ConditionFalse))
	f.g.Expect(last.Reason).To(Equal(v1alpha1.BackupJobJobFailedReason))
	f.g.Expect(last.Message).To(ContainSubstring("backoff limit"))
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobLastRunFailedReason))
	f.g.Expect(f.get().Status.Backups[0].KeptBy).To(Equal([]v1alpha1.RetentionRule{v1alpha1.KeptByFailed}))
}

// Retention deletes exactly the backups the policy drops: with keepLast 2
// and keepFailed 0, of five successful runs the three oldest go, except the
// pinned one; a failed run goes at once.
func TestRetentionDeletesExactlyTheDroppedBackups(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(2)), KeepFailed: ptr.To(int32(0))}
	})
	var runs []string
	for i := 1; i <= 5; i++ {
		d := time.Duration(i) * 10 * time.Second
		f.at(d)
		runs = append(runs, f.runName(d))
		f.finishJob(f.runName(d), true)
		if i == 1 {
			pinned := f.claims()[runs[0]]
			pinned.Labels[v1alpha1.PinnedLabel] = "true"
			f.g.Expect(k8sClient.Update(t.Context(), &pinned)).To(Succeed())
		}
	}
	f.at(55 * time.Second)
	f.g.Expect(f.liveClaims()).To(ConsistOf(runs[0], runs[3], runs[4]))
	status := f.get().Status
	f.g.Expect(status.BackupCount).To(BeNumerically(">=", 3))
	kept := map[string][]v1alpha1.RetentionRule{}
	for _, b := range status.Backups {
		kept[b.Name] = b.KeptBy
	}
	f.g.Expect(kept[runs[0]]).To(Equal([]v1alpha1.RetentionRule{v1alpha1.KeptAsPinned}))
	f.g.Expect(kept[runs[4]]).To(ContainElements(v1alpha1.KeptAsNewestSuccessful, v1alpha1.KeptByLast))

	f.at(60 * time.Second)
	failed := f.runName(60 * time.Second)
	f.finishJob(failed, false)
	f.at(61 * time.Second)
	f.g.Expect(f.liveClaims()).To(ConsistOf(runs[0], runs[3], runs[4]))
	// The failed run stays visible through its Job.
	f.g.Expect(f.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionFalse))
}

// Retention deletes only what runs made. Someone who may patch claims but
// not delete them labels two claims as this BackupJob's old successful
// backups: one of a name of their own, one named as a run would be, made
// after the BackupJob without the UID a run records. Neither is counted
// or deleted, however many newer backups there are.
func TestRetentionNeverDeletesAClaimLabelledByHand(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(1)), KeepFailed: ptr.To(int32(0))}
	})
	longAgo := f.created.Add(-24 * time.Hour)
	labelledByHand := func(name string) {
		claim := &corev1.PersistentVolumeClaim{}
		f.g.Expect(k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, claim)).To(Succeed())
		patch := client.MergeFrom(claim.DeepCopy())
		claim.Labels = map[string]string{
			v1alpha1.BackupJobLabel: f.bj.Name, backupjob.RunLabel: name, backupjob.ResultLabel: string(v1alpha1.BackupSucceeded),
			platform.ManagedByLabel: platform.Name,
		}
		claim.Annotations = map[string]string{backupjob.ScheduledTimeAnnotation: stamp(longAgo)}
		f.g.Expect(k8sClient.Patch(t.Context(), claim, patch)).To(Succeed())
	}
	runNamed := backupjob.RunName(f.bj.Name, longAgo)
	f.g.Expect(k8sClient.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: runNamed, Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})).To(Succeed())
	labelledByHand("data")
	labelledByHand(runNamed)

	var last string
	for i := 1; i <= 3; i++ {
		d := time.Duration(i) * 10 * time.Second
		f.at(d)
		last = f.runName(d)
		f.finishJob(last, true)
	}
	f.at(35 * time.Second)
	f.g.Expect(f.liveClaims()).To(ConsistOf("data", runNamed, last), "the runs' older backups are deleted, the claims labelled by hand are not")
	for _, b := range f.get().Status.Backups {
		f.g.Expect(b.Name).NotTo(BeElementOf("data", runNamed), "a claim labelled by hand is no backup of this BackupJob")
	}
}

// Someone who may create claims takes the name of the next run first, even
// labelled as the run's: the run does not start, the BackupJob says which
// name is taken, no Job copies into that claim, and the claim is left as
// it was. The run after it starts as usual.
func TestASquattedRunNameIsReportedAndLeftAlone(t *testing.T) {
	f := newFixture(t, false)
	squatted := f.runName(10 * time.Second)
	f.g.Expect(k8sClient.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: squatted, Namespace: f.ns, Labels: map[string]string{
			v1alpha1.BackupJobLabel: f.bj.Name, backupjob.RunLabel: squatted, platform.ManagedByLabel: platform.Name,
		}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})).To(Succeed())
	before := f.claims()[squatted]

	f.at(10 * time.Second)
	degraded := f.condition(v1alpha1.BackupJobDegradedCondition)
	f.g.Expect(degraded).NotTo(BeNil())
	f.g.Expect(degraded.Reason).To(Equal(v1alpha1.BackupJobRunConflictReason))
	f.g.Expect(degraded.Message).To(ContainSubstring(squatted))
	f.g.Expect(f.jobs()).To(BeEmpty(), "no Job copies into a claim that is not the run's")
	after := f.claims()[squatted]
	f.g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the claim is left as it was")

	f.at(20 * time.Second)
	f.g.Expect(f.jobs()).To(ConsistOf(HaveField("Name", f.runName(20*time.Second))))
}

// A run's Job removed before its result was recorded (a TTL controller
// removed it while the operator was away) is not made again: it would copy
// into a backup that may be complete. The run failed. A claim whose Job
// was never made (none in status.active) gets it.
func TestAJobGoneAfterItStartedIsNotRunAgain(t *testing.T) {
	f := newFixture(t, false)
	f.at(10 * time.Second)
	run := f.runName(10 * time.Second)
	job := &batchv1.Job{}
	f.g.Expect(k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: run}, job)).To(Succeed())
	f.g.Expect(f.get().Status.Active).To(ContainElement(HaveField("UID", job.UID)), "status records the Job it made")
	f.g.Expect(k8sClient.Delete(t.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	f.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: run}, &batchv1.Job{})
	}).Should(Satisfy(apierrors.IsNotFound))

	f.at(11 * time.Second)
	f.g.Expect(f.jobs()).NotTo(ContainElement(HaveField("Name", run)), "not made again")
	claim := f.claims()[run]
	f.g.Expect(claim.Labels).To(HaveKeyWithValue(backupjob.ResultLabel, string(v1alpha1.BackupFailed)))
	f.g.Expect(claim.Annotations[backupjob.ResultMessageAnnotation]).To(ContainSubstring("deleted before its result was recorded"))

	// The next run's claim, as if its Job's creation had failed: no Job,
	// none in status. Its Job is made.
	f.at(20 * time.Second)
	next := f.runName(20 * time.Second)
	f.g.Expect(k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: next}, job)).To(Succeed())
	f.g.Expect(k8sClient.Delete(t.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	bj := f.get()
	unrecorded := bj.DeepCopy()
	unrecorded.Status.Active = nil
	f.g.Expect(k8sClient.Status().Patch(t.Context(), unrecorded, client.MergeFrom(bj))).To(Succeed())
	f.g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: next}, &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound))
		f.at(21 * time.Second)
		g.Expect(f.jobs()).To(ContainElement(HaveField("Name", next)))
	}).Should(Succeed())
}

// A failed run whose backup retention deletes (keepFailed 0) and whose Job
// the history limit deletes (failedJobsHistoryLimit 0) at once is still the
// last run status tells of, from status.lastFailure, until a later run
// finishes.
func TestFailureWithoutAnyTraceLeftIsStillReported(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(2)), KeepFailed: ptr.To(int32(0))}
		bj.Spec.FailedJobsHistoryLimit = ptr.To(int32(0))
	})
	f.at(10 * time.Second)
	f.finishJob(f.runName(10*time.Second), true)
	f.at(20 * time.Second)
	failed := f.runName(20 * time.Second)
	f.finishJob(failed, false)
	for _, d := range []time.Duration{21 * time.Second, 22 * time.Second} {
		f.at(d)
		f.g.Expect(f.liveClaims()).To(ConsistOf(f.runName(10*time.Second)), "the failed run's backup is gone")
		f.g.Expect(f.jobs()).NotTo(ContainElement(HaveField("Name", failed)), "and its Job")
		last := f.condition(v1alpha1.BackupJobLastRunSucceededCondition)
		f.g.Expect(last.Status).To(Equal(metav1.ConditionFalse))
		f.g.Expect(last.Message).To(ContainSubstring(failed))
		f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobLastRunFailedReason))
		f.g.Expect(f.get().Status.LastFailure).To(HaveField("Run", failed))
	}

	// A later run that succeeds ends it; the record stays.
	f.at(30 * time.Second)
	f.finishJob(f.runName(30*time.Second), true)
	f.at(31 * time.Second)
	f.g.Expect(f.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
	f.g.Expect(f.get().Status.LastFailure).To(HaveField("Run", failed))
}

// A backup retention deleted but that a finalizer holds is named in
// RetentionApplied=False (DeletionBlocked), and rechecked after a while,
// not at once.
func TestBlockedDeletionIsReported(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(1)), KeepFailed: ptr.To(int32(0))}
	})
	f.at(10 * time.Second)
	first := f.runName(10 * time.Second)
	claim := f.claims()[first]
	claim.Finalizers = append(claim.Finalizers, "example.com/someone-elses")
	f.g.Expect(k8sClient.Update(t.Context(), &claim)).To(Succeed())
	t.Cleanup(func() {
		c := &corev1.PersistentVolumeClaim{}
		if k8sClient.Get(context.Background(), client.ObjectKeyFromObject(&claim), c) == nil {
			c.Finalizers = nil
			_ = k8sClient.Update(context.Background(), c)
		}
	})
	f.finishJob(first, true)
	f.at(20 * time.Second)
	f.finishJob(f.runName(20*time.Second), true)
	f.at(21 * time.Second)
	// Just deleted, the claim is still going: not blocked yet.
	f.g.Expect(f.condition(v1alpha1.BackupJobRetentionAppliedCondition).Status).To(Equal(metav1.ConditionTrue))
	res := f.at(25 * time.Second)
	c := f.condition(v1alpha1.BackupJobRetentionAppliedCondition)
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobDeletionBlockedReason))
	f.g.Expect(c.Message).To(ContainSubstring(first))
	f.g.Expect(c.Message).To(ContainSubstring("example.com/someone-elses"))
	// Rechecked with the next run, not in a hot loop.
	f.g.Expect(res.RequeueAfter).To(BeNumerically(">=", 4*time.Second))
}

// With the default deletionPolicy Retain, deleting the BackupJob keeps its
// backups, labelled and without owner references.
func TestDeletionPolicyRetainKeepsBackups(t *testing.T) {
	f := newFixture(t, false)
	f.at(10 * time.Second)
	f.finishJob(f.runName(10*time.Second), true)
	f.at(11 * time.Second)
	f.g.Expect(f.get().Finalizers).To(BeEmpty())
	f.g.Expect(k8sClient.Delete(t.Context(), f.bj)).To(Succeed())
	f.reconcile()
	claims := f.claims()
	f.g.Expect(claims).To(HaveKey(f.runName(10 * time.Second)))
	c := claims[f.runName(10*time.Second)]
	f.g.Expect(c.DeletionTimestamp).To(BeNil())
	f.g.Expect(c.OwnerReferences).To(BeEmpty())
	f.g.Expect(c.Labels).To(HaveKeyWithValue(v1alpha1.BackupJobLabel, "nightly"))
}

// A BackupJob deleted with deletionPolicy Retain leaves its backups; a new
// BackupJob of the same name lists them nowhere and never deletes them:
// neither its retention (here keepLast 1) nor its own deletionPolicy
// Delete.
func TestRecreatedBackupJobLeavesTheEarlierOnesBackupsAlone(t *testing.T) {
	keepOne := func(bj *v1alpha1.BackupJob) {
		bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(1)), KeepFailed: ptr.To(int32(0))}
	}
	earlier := newFixture(t, false, keepOne)
	earlier.at(10 * time.Second)
	kept := earlier.runName(10 * time.Second)
	earlier.finishJob(kept, true)
	earlier.at(11 * time.Second)
	earlier.g.Expect(k8sClient.Delete(t.Context(), earlier.bj)).To(Succeed())
	earlier.reconcile()
	earlier.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(earlier.bj), &v1alpha1.BackupJob{})
	}).Should(Satisfy(apierrors.IsNotFound))

	// Runs are named after their scheduled times, @every 10s from the
	// creation: created in the same second, both would name their first
	// run alike, which no real schedule does.
	for time.Now().Unix() <= earlier.created.Unix() {
		time.Sleep(50 * time.Millisecond)
	}
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: earlier.bj.Name, Namespace: earlier.ns}, Spec: *earlier.bj.Spec.DeepCopy()}
	bj.Spec.DeletionPolicy = v1alpha1.DeleteBackups
	earlier.g.Expect(k8sClient.Create(t.Context(), bj)).To(Succeed())
	r, clock := newReconciler(bj.CreationTimestamp.Time, false)
	f := &fixture{t: t, g: earlier.g, ns: earlier.ns, bj: bj, r: r, clock: clock, created: bj.CreationTimestamp.Time}
	for _, d := range []time.Duration{10 * time.Second, 20 * time.Second} {
		f.at(d)
		f.finishJob(f.runName(d), true)
	}
	f.at(21 * time.Second)
	f.g.Expect(f.liveClaims()).To(ConsistOf(kept, f.runName(20*time.Second)), "the earlier BackupJob's backup, and the newest of this one's")
	status := f.get().Status
	f.g.Expect(status.Backups).To(ConsistOf(HaveField("Name", f.runName(20*time.Second))))
	f.g.Expect(f.condition(v1alpha1.BackupJobRetentionAppliedCondition).Message).To(ContainSubstring(kept))

	f.g.Expect(k8sClient.Delete(t.Context(), f.bj)).To(Succeed())
	f.at(22 * time.Second)
	f.g.Expect(f.liveClaims()).To(Equal([]string{kept}))
}

// With deletionPolicy Delete, the finalizer deletes every backup but the
// pinned ones, then lets the BackupJob go.
func TestDeletionPolicyDeleteDeletesUnpinnedBackups(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.DeletionPolicy = v1alpha1.DeleteBackups })
	f.at(10 * time.Second)
	f.finishJob(f.runName(10*time.Second), true)
	f.at(20 * time.Second)
	f.finishJob(f.runName(20*time.Second), true)
	f.at(21 * time.Second)
	f.g.Expect(f.get().Finalizers).To(ContainElement(backupjob.Finalizer))
	pinned := f.claims()[f.runName(10*time.Second)]
	pinned.Labels[v1alpha1.PinnedLabel] = "true"
	f.g.Expect(k8sClient.Update(t.Context(), &pinned)).To(Succeed())

	f.g.Expect(k8sClient.Delete(t.Context(), f.bj)).To(Succeed())
	f.at(22 * time.Second)
	f.g.Expect(f.liveClaims()).To(Equal([]string{f.runName(10 * time.Second)}))
	// Without a controller manager the claims' protection finalizer stays:
	// after the grace period the BackupJob goes anyway.
	f.at(22*time.Second + 2*time.Minute)
	err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(f.bj), &v1alpha1.BackupJob{})
	f.g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	f.g.Expect(err).To(HaveOccurred(), "the BackupJob is gone")
}

// A backup whose deletion the API server refuses (here a policy) does not
// keep a BackupJob with deletionPolicy Delete for ever: it is tried until
// the grace period ends, reported, and stays.
func TestRefusedBackupDeletionDoesNotKeepTheBackupJob(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.DeletionPolicy = v1alpha1.DeleteBackups })
	events := f.recordEvents()
	f.at(10 * time.Second)
	kept := f.runName(10 * time.Second)
	f.finishJob(kept, true)
	f.at(11 * time.Second)

	testgen.Refuse(t, k8sClient, f.ns, admissionregistrationv1.Delete, "", "persistentvolumeclaims", kept, "backups are kept by policy")

	// The policy takes effect a moment after its creation.
	claim := f.claims()[kept]
	f.g.Eventually(func() error {
		return k8sClient.Delete(t.Context(), &claim, client.DryRunAll)
	}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("backups are kept by policy")))

	f.g.Expect(k8sClient.Delete(t.Context(), f.bj)).To(Succeed())
	f.at(12 * time.Second)
	f.g.Expect(drain(events)).To(ContainElement(ContainSubstring("BackupDeletionFailed")))
	f.g.Expect(f.get().DeletionTimestamp).NotTo(BeNil(), "kept within the grace period")

	f.at(12*time.Second + 2*time.Minute)
	err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(f.bj), &v1alpha1.BackupJob{})
	f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the BackupJob is gone after the grace period")
	f.g.Expect(f.liveClaims()).To(ConsistOf(kept), "the backup stays")
}

// Without the VolumeSnapshot API a snapshot target is reported, and
// nothing crashes or starts.
func TestSnapshotTargetWithoutTheAPI(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
		bj.Spec.JobTemplate = nil
	})
	f.at(10 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	c := f.condition(v1alpha1.BackupJobDegradedCondition)
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobSnapshotAPIMissingReason))
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Status).To(Equal(metav1.ConditionFalse))
}

// A schedule that passes the API server's shape check but is not valid is
// reported, naming the field, and starts nothing.
func TestInvalidScheduleIsReported(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.Schedule = "61 * * * *" })
	f.at(2 * time.Minute)
	f.g.Expect(f.jobs()).To(BeEmpty())
	c := f.condition(v1alpha1.BackupJobReadyCondition)
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobInvalidScheduleReason))
	f.g.Expect(c.Message).To(ContainSubstring("spec.schedule"))
	// The time zone is valid: retention goes on, and is not said to wait
	// for it.
	f.g.Expect(f.condition(v1alpha1.BackupJobRetentionAppliedCondition).Reason).To(Equal(v1alpha1.BackupJobRetentionAppliedReason))
}

// A missing source claim is reported and its runs are counted as missed.
func TestMissingSourceCountsAsMissed(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.Source.PersistentVolumeClaimName = "nothing" })
	f.at(10 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Reason).To(Equal(v1alpha1.BackupJobSourceNotFoundReason))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(1)))
}

// A new spec.runNow value starts exactly one run, at once.
func TestRunNowStartsOneRun(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.Schedule = "@daily" })
	f.at(3 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	bj := f.get()
	bj.Spec.RunNow = "first"
	f.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	f.at(4 * time.Second)
	f.g.Expect(f.jobs()).To(HaveLen(1))
	f.at(5 * time.Second)
	f.g.Expect(f.jobs()).To(HaveLen(1))
	f.g.Expect(f.get().Status.LastRunNow).To(Equal("first"))
}

// The copy Job of a ReadWriteOnce claim that a running pod mounts goes to
// that pod's node: elsewhere it would wait on a Multi-Attach error.
func TestCopyJobRunsOnTheNodeOfTheSource(t *testing.T) {
	f := newFixture(t, false)
	app := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: f.ns}, Spec: corev1.PodSpec{
		NodeName:   "node-b",
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	f.g.Expect(k8sClient.Create(t.Context(), app)).To(Succeed())
	f.at(10 * time.Second)
	jobs := f.jobs()
	f.g.Expect(jobs).To(HaveLen(1))
	affinity := jobs[0].Spec.Template.Spec.Affinity
	f.g.Expect(affinity).NotTo(BeNil())
	f.g.Expect(affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(Equal([]corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}},
	}}))

	// Once no pod mounts it, the next run's copy may go anywhere.
	f.g.Expect(k8sClient.Delete(t.Context(), app, client.GracePeriodSeconds(0))).To(Succeed())
	f.finishJob(jobs[0].Name, true)
	f.at(20 * time.Second)
	for _, j := range f.jobs() {
		if j.Name != jobs[0].Name {
			f.g.Expect(j.Spec.Template.Spec.Affinity).To(BeNil())
		}
	}
	f.g.Expect(f.jobs()).To(HaveLen(2))
}

// A ReadWriteOncePod claim cannot be mounted by a second pod: a copy is
// refused, naming the field, and nothing is made.
func TestReadWriteOncePodSourceIsRefusedForACopy(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) { bj.Spec.Source.PersistentVolumeClaimName = "private" })
	f.g.Expect(k8sClient.Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})).To(Succeed())
	f.at(10 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	f.g.Expect(f.claims()).To(BeEmpty(), "no backup claim")
	ready := f.condition(v1alpha1.BackupJobReadyCondition)
	f.g.Expect(ready.Reason).To(Equal(v1alpha1.BackupJobSourceNotMountableReason))
	f.g.Expect(ready.Message).To(ContainSubstring("spec.source.persistentVolumeClaimName"))
	f.g.Expect(f.get().Status.MissedRuns).To(Equal(int64(1)))
}
