package e2e

import (
	"context"
	"fmt"
	"slices"
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
// schedules.
func TestBackupJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env, err := devenv.StartEnvironment(ctx, devenv.EnvironmentOptions{
		RepoRoot:       repoRoot,
		Scheme:         scheme,
		Components:     []string{"backupjob"},
		OperatorBinary: operatorBinary,
		OperatorArgs:   []string{"--all-namespaces", "--verbose"},
		Cluster:        localcluster.Options{Simulations: true, Logf: t.Logf},
	})
	if err != nil {
		t.Fatalf("start a cluster with the simulation parts and the backupjob component: %v", err)
	}
	e := &environment{env}
	t.Cleanup(func() {
		if t.Failed() {
			log := e.operator().LogPath
			t.Logf("the end of the operator's log (%s):\n%s", log, devenv.TailFile(log, 60))
		}
		e.Stop()
	})

	t.Run("volume runs and retention", func(t *testing.T) { t.Parallel(); testBackupRunsAndRetention(t, e) })
	t.Run("failed run", func(t *testing.T) { t.Parallel(); testFailedRunKeepsVolume(t, e) })
	t.Run("snapshot target", func(t *testing.T) { t.Parallel(); testSnapshotTarget(t, e) })
	t.Run("deletion keeps backups", func(t *testing.T) { t.Parallel(); testDeletionKeepsBackups(t, e) })
	t.Run("restore drill", func(t *testing.T) { t.Parallel(); testRestoreDrill(t, e) })
}

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
		g.Expect(deletedBackupEvents(g, ctx, e, ns)).To(BeNumerically(">=", 2))
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

func deletedBackupEvents(g Gomega, ctx context.Context, e *environment, ns string) int {
	list := &eventsv1.EventList{}
	g.Expect(e.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, ev := range list.Items {
		if ev.Reason == "BackupDeleted" {
			n++
		}
	}
	return n
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
		bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, JobTemplate: v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
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
