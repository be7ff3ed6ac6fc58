package backupjob_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
)

// pgFixture is a fixture whose BackupJob backs up the PostgresCluster db
// of the test's namespace with a snapshot target; nothing runs the
// PostgresCluster: the test writes its status as its instances would
// report.
type pgFixture struct {
	*fixture
	pg *v1alpha1.PostgresCluster
}

// snapshotCRD is the VolumeSnapshot CRD, which the suite's API server
// serves once a test of this file installs it: the other tests run with
// the API not served.
const snapshotCRD = "../../localcluster/simulation_crds/snapshot.storage.k8s.io_volumesnapshots.yaml"

var installSnapshots sync.Once

// serveSnapshots installs the VolumeSnapshot CRD and waits until it is
// served.
func serveSnapshots(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	installSnapshots.Do(func() {
		data, err := os.ReadFile(snapshotCRD)
		g.Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(data, &crd.Object)).To(Succeed())
		g.Expect(client.IgnoreAlreadyExists(k8sClient.Create(context.Background(), crd))).To(Succeed())
	})
	g.Eventually(func() error {
		return k8sClient.List(t.Context(), &snapshotv1.VolumeSnapshotList{}, client.InNamespace("default"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func newPostgresFixture(t *testing.T, instances int32, allowPrimary bool) *pgFixture {
	t.Helper()
	if !testing.Short() {
		serveSnapshots(t)
	}
	return newPostgresFixtureWith(t, instances, allowPrimary, &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}})
}

// newBaseBackupFixture is a fixture whose BackupJob backs up the
// PostgresCluster db with a volume target: base backups.
func newBaseBackupFixture(t *testing.T, instances int32) *pgFixture {
	t.Helper()
	return newPostgresFixtureWith(t, instances, false, &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}})
}

func newPostgresFixtureWith(t *testing.T, instances int32, allowPrimary bool, target *v1alpha1.BackupTarget) *pgFixture {
	t.Helper()
	f := newFixture(t, target.Snapshot != nil, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Source = v1alpha1.BackupSource{PostgresCluster: "db", AllowPrimaryFencing: allowPrimary}
		bj.Spec.Target = target
		bj.Spec.JobTemplate = nil
		bj.Spec.Schedule = "0 0 1 1 *" // in effect, runs by runNow only
	})
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: instances, Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	f.g.Expect(k8sClient.Create(t.Context(), pg)).To(Succeed())
	p := &pgFixture{fixture: f, pg: pg}
	members := []v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}}
	if instances > 1 {
		members = append(members,
			v1alpha1.PostgresInstanceStatus{Name: "db-2", Role: v1alpha1.PostgresReplicaRole, Ready: true, Timeline: 1, ReceivedLSN: "0/7000000"},
			v1alpha1.PostgresInstanceStatus{Name: "db-3", Role: v1alpha1.PostgresReplicaRole, Ready: true, Timeline: 1, ReceivedLSN: "0/8000000"})
	}
	p.setInstances(members...)
	return p
}

// setInstances writes the cluster's status.instances, as its controller
// would from the instances' reports.
func (p *pgFixture) setInstances(members ...v1alpha1.PostgresInstanceStatus) {
	p.t.Helper()
	pg := p.cluster()
	pg.Status.CurrentPrimary, pg.Status.TargetPrimary, pg.Status.Instances = "db-1", "db-1", members
	p.g.Expect(k8sClient.Status().Update(p.t.Context(), pg)).To(Succeed())
}

func (p *pgFixture) cluster() *v1alpha1.PostgresCluster {
	p.t.Helper()
	pg := &v1alpha1.PostgresCluster{}
	p.g.Expect(k8sClient.Get(p.t.Context(), client.ObjectKeyFromObject(p.pg), pg)).To(Succeed())
	return pg
}

func (p *pgFixture) runNow(value string) {
	p.t.Helper()
	bj := p.get()
	bj.Spec.RunNow = value
	p.g.Expect(k8sClient.Update(p.t.Context(), bj)).To(Succeed())
}

func (p *pgFixture) snapshots() []snapshotv1.VolumeSnapshot {
	p.t.Helper()
	list := &snapshotv1.VolumeSnapshotList{}
	p.g.Expect(k8sClient.List(p.t.Context(), list, client.InNamespace(p.ns))).To(Succeed())
	return list.Items
}

// A run fences the most caught-up replica, cuts the snapshot of its claim
// only once it reports a clean shutdown for this run, and unfences it once
// the snapshot is ready; the backup records where its data stands.
func TestPostgresRunFencesSnapshotsAndUnfences(t *testing.T) {
	p := newPostgresFixture(t, 3, false)
	p.runNow("first")
	p.at(time.Second)

	a := p.cluster().Annotations
	p.g.Expect(a).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-3"), "the replica with the most WAL")
	run := a[v1alpha1.PostgresBackupFenceByAnnotation]
	p.g.Expect(run).To(Equal(p.runName(time.Second)))
	p.g.Expect(a).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceRunNowAnnotation, "first"))
	p.g.Expect(p.snapshots()).To(BeEmpty(), "no snapshot before the clean shutdown")
	p.g.Expect(p.get().Status.LastRunNow).To(Equal("first"))

	primary := v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	replica := v1alpha1.PostgresInstanceStatus{Name: "db-2", Role: v1alpha1.PostgresReplicaRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	// Fenced, still stopping; then a clean shutdown reported for another
	// run (a stale report): neither lets the snapshot be cut.
	p.setInstances(primary, replica, v1alpha1.PostgresInstanceStatus{Name: "db-3", Fenced: true})
	p.at(2 * time.Second)
	p.setInstances(primary, replica, v1alpha1.PostgresInstanceStatus{Name: "db-3", Fenced: true, BackupFence: "nightly-1", CleanShutdown: true, Timeline: 1, CheckpointLSN: "0/7FFFF00"})
	p.at(3 * time.Second)
	p.g.Expect(p.snapshots()).To(BeEmpty(), "no snapshot before the clean shutdown of this run")
	p.g.Expect(p.condition(v1alpha1.BackupJobReadyCondition).Message).To(ContainSubstring("waits for instance db-3"))

	p.setInstances(primary, replica, v1alpha1.PostgresInstanceStatus{Name: "db-3", Fenced: true, BackupFence: run, CleanShutdown: true, Timeline: 1, CheckpointLSN: "0/8000028"})
	p.at(4 * time.Second)
	snaps := p.snapshots()
	p.g.Expect(snaps).To(HaveLen(1))
	s := snaps[0]
	p.g.Expect(s.Name).To(Equal(run))
	p.g.Expect(*s.Spec.Source.PersistentVolumeClaimName).To(Equal("db-3"))
	p.g.Expect(s.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"), HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-3"),
		HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1"), HaveKeyWithValue(v1alpha1.BackupCheckpointLSNAnnotation, "0/8000028"),
		HaveKeyWithValue(backupjob.RunNowAnnotation, "first")))
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-3"), "fenced until the snapshot is ready")

	// A second request while the fence is held waits for it.
	p.runNow("second")
	p.at(5 * time.Second)
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceByAnnotation, run))
	p.g.Expect(p.snapshots()).To(HaveLen(1))

	s.Status = &snapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: ptr.To(metav1.NewTime(p.created.Add(5 * time.Second)))}
	p.g.Expect(k8sClient.Status().Update(t.Context(), &s)).To(Succeed())
	p.at(6 * time.Second)
	// The first run's fence is gone, and the waiting request's run took
	// the fence at once, on a replica still streaming.
	a = p.cluster().Annotations
	p.g.Expect(a).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceByAnnotation, p.runName(6*time.Second)))
	p.g.Expect(a).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceRunNowAnnotation, "second"))
	p.g.Expect(a).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-2"))
	p.g.Expect(p.snapshots()[0].Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"), "what a restore selects")
	p.g.Expect(p.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
}

// A run whose instance never reports a clean shutdown fails at the
// timeout and leaves no fence; so does a fenced run whose BackupJob is
// deleted.
func TestPostgresFenceNeverOutlivesItsRun(t *testing.T) {
	p := newPostgresFixture(t, 3, false)
	p.runNow("first")
	p.at(time.Second)
	p.g.Expect(p.cluster().Annotations).To(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))

	// The failure is recorded first, the fence removed a moment later.
	p.at(time.Second + 5*time.Minute)
	last := p.condition(v1alpha1.BackupJobLastRunSucceededCondition)
	p.g.Expect(last.Status).To(Equal(metav1.ConditionFalse))
	p.g.Expect(last.Reason).To(Equal(v1alpha1.BackupJobFenceTimeoutReason))
	p.at(time.Second + 5*time.Minute + time.Second)
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))
	p.g.Expect(p.snapshots()).To(BeEmpty())

	// The next run fences again; the BackupJob is deleted meanwhile.
	p.runNow("second")
	p.at(6 * time.Minute)
	p.g.Expect(p.cluster().Annotations).To(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))
	p.g.Expect(p.get().Finalizers).To(ContainElement(backupjob.Finalizer), "a PostgresCluster source holds the BackupJob until its fences are gone")
	p.g.Expect(k8sClient.Delete(t.Context(), p.get())).To(Succeed())
	p.reconcile()
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))
	p.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(p.bj), &v1alpha1.BackupJob{})
	}).
		Should(Satisfy(func(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }))
}

// A single-instance cluster is not fenced unless the BackupJob allows it:
// the run is refused and the PostgresCluster not written at all.
func TestPostgresSingleInstanceRefused(t *testing.T) {
	p := newPostgresFixture(t, 1, false)
	before := p.cluster().ResourceVersion
	p.runNow("first")
	p.at(time.Second)
	p.g.Expect(p.cluster().ResourceVersion).To(Equal(before), "the cluster is not touched")
	p.g.Expect(p.snapshots()).To(BeEmpty())
	degraded := p.condition(v1alpha1.BackupJobDegradedCondition)
	p.g.Expect(degraded.Reason).To(Equal(v1alpha1.BackupJobPrimaryFencingRefusedReason))
	p.g.Expect(degraded.Message).To(ContainSubstring("allowPrimaryFencing"))
	p.g.Expect(p.condition(v1alpha1.BackupJobReadyCondition).Status).To(Equal(metav1.ConditionFalse))

	allowed := newPostgresFixture(t, 1, true)
	allowed.runNow("first")
	allowed.at(time.Second)
	allowed.g.Expect(allowed.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-1"))
}

// A claim of a PostgresCluster named as a claim source is refused with a
// message that points to source.postgresCluster.
func TestPostgresClaimAsSourceRefused(t *testing.T) {
	f := newFixture(t, false)
	claim := &corev1.PersistentVolumeClaim{}
	f.g.Expect(k8sClient.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "data"}, claim)).To(Succeed())
	claim.Labels = map[string]string{v1alpha1.PostgresClusterLabel: "db"}
	f.g.Expect(k8sClient.Update(t.Context(), claim)).To(Succeed())
	f.at(10 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	degraded := f.condition(v1alpha1.BackupJobDegradedCondition)
	f.g.Expect(degraded.Reason).To(Equal(v1alpha1.BackupJobSourceIsPostgresClusterReason))
	f.g.Expect(degraded.Message).To(ContainSubstring("spec.source.postgresCluster"))
}

// A base backup run fences nothing: it makes the run's claim, annotated
// with the replica it copies (the one with the most WAL), and a Job that
// streams from that replica's stable name with the backup role's Secret;
// the Job's success is the backup's. A single-instance cluster is copied
// from its primary, without allowPrimaryFencing; with no ready instance
// the run waits and says why.
func TestPostgresBaseBackupRun(t *testing.T) {
	p := newBaseBackupFixture(t, 3)
	before := p.cluster().ResourceVersion
	p.runNow("first")
	p.at(time.Second)
	run := p.runName(time.Second)

	p.g.Expect(p.cluster().ResourceVersion).To(Equal(before), "no fence: the PostgresCluster is not written")
	claim, ok := p.claims()[run]
	p.g.Expect(ok).To(BeTrue(), "the run's claim")
	p.g.Expect(claim.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"),
		HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-3"), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1")))
	jobs := p.jobs()
	p.g.Expect(jobs).To(HaveLen(1))
	c := jobs[0].Spec.Template.Spec.Containers[0]
	p.g.Expect(c.Command).To(ContainElements("basebackup", "db-3.db."+p.ns+".svc.cluster.local"))
	p.g.Expect(c.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", "db-backup")))

	// The Job's pod says where the backup starts, in its termination
	// message; the backup records it.
	p.podOfJob(run, "pg-basebackup", corev1.PodSucceeded, 0, `{"startLSN":"0/A000028","endLSN":"0/A000100","timeline":2,"fromStandby":true}`)
	p.finishJob(run, true)
	p.at(2 * time.Second)
	p.g.Expect(p.claims()[run].Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"), "what a restore selects")
	p.g.Expect(p.claims()[run].Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupStartLSNAnnotation, "0/A000028"),
		HaveKeyWithValue(v1alpha1.BackupEndLSNAnnotation, "0/A000100"), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "2")),
		"where the backup starts and ends, as its pod said")
	p.g.Expect(p.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))

	single := newBaseBackupFixture(t, 1)
	single.runNow("first")
	single.at(time.Second)
	p.g.Expect(single.claims()[single.runName(time.Second)].Annotations).To(HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-1"),
		"a base backup of the primary stops no write: no allowPrimaryFencing needed")

	waiting := newBaseBackupFixture(t, 2)
	waiting.setInstances(v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole}, v1alpha1.PostgresInstanceStatus{Name: "db-2"})
	waiting.runNow("first")
	waiting.at(time.Second)
	p.g.Expect(waiting.claims()).To(BeEmpty())
	p.g.Expect(waiting.jobs()).To(BeEmpty())
	ready := waiting.condition(v1alpha1.BackupJobReadyCondition)
	p.g.Expect(ready.Reason).To(Equal(v1alpha1.BackupJobNoReadyReplicaReason))
	p.g.Expect(ready.Message).To(ContainSubstring("ready to stream a base backup"))
}

// podOfJob creates a pod of Job job whose container ended in phase with
// message, as the Job controller and a kubelet would have left it.
func (p *pgFixture) podOfJob(job, container string, phase corev1.PodPhase, code int32, message string) {
	p.t.Helper()
	// As the Job controller makes it: the operator reads results only from
	// the pods the Job controls.
	owner := &batchv1.Job{}
	p.g.Expect(k8sClient.Get(p.t.Context(), client.ObjectKey{Namespace: p.ns, Name: job}, owner)).To(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job + "-x1", Namespace: p.ns, Labels: map[string]string{"batch.kubernetes.io/job-name": job},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "postgres:15"}}}}
	p.g.Expect(k8sClient.Create(p.t.Context(), pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message}}}}}
	p.g.Expect(k8sClient.Status().Update(p.t.Context(), pod)).To(Succeed())
}

// drillOfFirstBackup gives the BackupJob a drill of every backup with the
// query sql, runs its first backup to success and returns the run's name
// and the temporary cluster its drill restored the backup into.
func (p *pgFixture) drillOfFirstBackup(sql string) (string, v1alpha1.PostgresCluster) {
	p.t.Helper()
	bj := p.get()
	bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: sql}
	p.g.Expect(k8sClient.Update(p.t.Context(), bj)).To(Succeed())
	p.runNow("first")
	p.at(time.Second)
	run := p.runName(time.Second)
	p.finishJob(run, true)
	p.at(2 * time.Second)
	drills := &v1alpha1.PostgresClusterList{}
	p.g.Expect(k8sClient.List(p.t.Context(), drills, client.InNamespace(p.ns), client.MatchingLabels{backupjob.DrillLabel: run})).To(Succeed())
	p.g.Expect(drills.Items).To(HaveLen(1), "a temporary cluster restored from the backup")
	return run, drills.Items[0]
}

// A PostgreSQL drill restores the new backup into a temporary cluster,
// runs its query once that cluster is Healthy, records the database's
// message when the query fails, and deletes the temporary cluster.
func TestPostgresDrillQueriesARestoredCluster(t *testing.T) {
	p := newBaseBackupFixture(t, 3)
	run, drill := p.drillOfFirstBackup("SELECT count(*) > 0 FROM orders")
	p.g.Expect(drill.Spec.Bootstrap.FromBackup.Name).To(Equal(run))
	p.g.Expect(p.jobs()).To(HaveLen(1), "no query before the restored cluster is Healthy")
	p.g.Expect(p.condition(v1alpha1.BackupJobVerifiedCondition).Reason).To(Equal(v1alpha1.BackupJobVerifyPendingReason))

	drill.Status.Phase, drill.Status.CurrentPrimary = v1alpha1.PostgresHealthy, drill.Name+"-1"
	p.g.Expect(k8sClient.Status().Update(t.Context(), &drill)).To(Succeed())
	p.at(2 * time.Second)
	p.g.Expect(p.jobs()).To(HaveLen(1), "no query while the restored cluster still has the source's passwords")

	drill.Status.Credentials.AppliedVersion = "1"
	p.g.Expect(k8sClient.Status().Update(t.Context(), &drill)).To(Succeed())
	p.at(3 * time.Second)
	verify := backupjob.DrillName(p.bj.Name, p.created.Add(time.Second))
	p.g.Expect(p.jobs()).To(ContainElement(HaveField("Name", verify)), "the query runs once the cluster is Healthy with its own passwords")

	p.podOfJob(verify, "pg-verify", corev1.PodFailed, 1, `the verify query failed: ERROR: relation "orders" does not exist (SQLSTATE 42P01)`)
	p.finishJob(verify, false)
	p.at(4 * time.Second)
	verified := p.condition(v1alpha1.BackupJobVerifiedCondition)
	p.g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
	p.g.Expect(verified.Message).To(ContainSubstring(`relation "orders" does not exist`), "the database's message")
	p.g.Expect(p.claims()[run].Annotations).To(HaveKeyWithValue(backupjob.VerifiedAnnotation, "Failed"))
	p.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(&drill), &v1alpha1.PostgresCluster{})
	}).Should(Satisfy(apierrors.IsNotFound), "the temporary cluster is deleted")
}

// A temporary cluster that never turns Healthy fails its drill at the
// deadline, with its Ready message, and is deleted.
func TestPostgresDrillOfAClusterThatNeverStarts(t *testing.T) {
	p := newBaseBackupFixture(t, 3)
	_, drill := p.drillOfFirstBackup("SELECT true")
	drill.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PostgresReadyCondition, Status: metav1.ConditionFalse, Reason: "Restoring",
		Message: "waiting for the backup to be restored onto the claim", LastTransitionTime: metav1.Now()}}
	p.g.Expect(k8sClient.Status().Update(t.Context(), &drill)).To(Succeed())

	p.at(2*time.Second + 9*time.Minute)
	p.g.Expect(p.condition(v1alpha1.BackupJobVerifiedCondition).Status).To(Equal(metav1.ConditionUnknown), "still waiting")
	p.at(2*time.Second + 11*time.Minute)
	verified := p.condition(v1alpha1.BackupJobVerifiedCondition)
	p.g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
	p.g.Expect(verified.Message).To(And(ContainSubstring("was not Healthy within 10m0s"), ContainSubstring("waiting for the backup to be restored")))
	p.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(&drill), &v1alpha1.PostgresCluster{})
	}).Should(Satisfy(apierrors.IsNotFound))
}

// Retention does not delete a backup while its PostgreSQL restore drill
// runs: the temporary cluster restores from it while it starts. With
// keepLast 1, a second backup that succeeds meanwhile leaves the first in
// place until its drill is over; then retention deletes it.
func TestRetentionKeepsABackupItsPostgresDrillRestores(t *testing.T) {
	p := newBaseBackupFixture(t, 3)
	bj := p.get()
	bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To(int32(1)), KeepFailed: ptr.To(int32(0))}
	p.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	first, drill := p.drillOfFirstBackup("SELECT true")

	p.runNow("second")
	p.at(3 * time.Second)
	second := p.runName(3 * time.Second)
	p.finishJob(second, true)
	p.at(4 * time.Second)
	p.g.Expect(p.claims()[second].Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"))
	p.g.Expect(k8sClient.Get(t.Context(), client.ObjectKeyFromObject(&drill), &v1alpha1.PostgresCluster{})).To(Succeed(), "the drill still runs")
	p.g.Expect(p.liveClaims()).To(ContainElement(first), "the backup the drill's cluster restores from is kept while it does")

	// The drill ends (it fails: a backup whose drill passed would be kept
	// as the newest verified one): its cluster goes, and with it what held
	// the backup.
	p.g.Expect(k8sClient.Get(t.Context(), client.ObjectKeyFromObject(&drill), &drill)).To(Succeed())
	drill.Status.Phase, drill.Status.CurrentPrimary = v1alpha1.PostgresHealthy, drill.Name+"-1"
	drill.Status.Credentials.AppliedVersion = "1"
	p.g.Expect(k8sClient.Status().Update(t.Context(), &drill)).To(Succeed())
	p.at(5 * time.Second)
	verify := backupjob.DrillName(p.bj.Name, p.created.Add(time.Second))
	p.finishJob(verify, false)
	p.at(6 * time.Second)
	p.g.Expect(p.liveClaims()).To(ConsistOf(second), "retention applies once the drill is over")
}

// A BackupJob whose source is switched from a PostgresCluster to a claim
// while its cold-snapshot run still fences a replica (the snapshot is not
// ready) keeps its finalizer for as long as the fence is there: deleted
// then, it removes the fence, and the replica restarts.
func TestFenceOutlivesASourceSwitchNotTheBackupJob(t *testing.T) {
	p := newPostgresFixture(t, 3, false)
	p.runNow("first")
	p.at(time.Second)
	run := p.runName(time.Second)
	primary := v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	replica := v1alpha1.PostgresInstanceStatus{Name: "db-2", Role: v1alpha1.PostgresReplicaRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	p.setInstances(primary, replica, v1alpha1.PostgresInstanceStatus{Name: "db-3", Fenced: true, BackupFence: run, CleanShutdown: true, Timeline: 1, CheckpointLSN: "0/8000028"})
	p.at(2 * time.Second)
	p.g.Expect(p.snapshots()).To(HaveLen(1), "the snapshot is cut, not ready yet")
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-3"))

	bj := p.get()
	bj.Spec.Source = v1alpha1.BackupSource{PersistentVolumeClaimName: "data"}
	p.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	p.at(3 * time.Second)
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, "db-3"), "the run goes on until its snapshot is ready")

	p.g.Expect(k8sClient.Delete(t.Context(), p.get())).To(Succeed())
	p.at(4 * time.Second)
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation), "no fence outlives its BackupJob")
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceByAnnotation))
	p.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(p.bj), &v1alpha1.BackupJob{})
	}).Should(Satisfy(apierrors.IsNotFound))
}

// A run whose fence times out is recorded as failed in status before its
// fence goes: when the status write of the reconcile that saw the timeout
// is lost (here refused), the fence, the run's only trace, is still there
// for the next reconcile, which records the failure; the fence is removed
// by the one after, a moment later. LastRunSucceeded does not go on
// saying the run before succeeded.
func TestPostgresFenceTimeoutRecordedBeforeUnfence(t *testing.T) {
	p := newPostgresFixture(t, 3, false)
	// A first run succeeds.
	p.runNow("first")
	p.at(time.Second)
	first := p.runName(time.Second)
	primary := v1alpha1.PostgresInstanceStatus{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	replica := v1alpha1.PostgresInstanceStatus{Name: "db-2", Role: v1alpha1.PostgresReplicaRole, Ready: true, Timeline: 1, ReceivedLSN: "0/9000000"}
	p.setInstances(primary, replica, v1alpha1.PostgresInstanceStatus{Name: "db-3", Fenced: true, BackupFence: first, CleanShutdown: true, Timeline: 1, CheckpointLSN: "0/8000028"})
	p.at(2 * time.Second)
	s := p.snapshots()[0]
	s.Status = &snapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: ptr.To(metav1.NewTime(p.created.Add(2 * time.Second)))}
	p.g.Expect(k8sClient.Status().Update(t.Context(), &s)).To(Succeed())
	p.at(3 * time.Second)
	p.g.Expect(p.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))

	// The second fences a replica that never stops.
	p.runNow("second")
	p.at(4 * time.Second)
	second := p.runName(4 * time.Second)
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceByAnnotation, second))

	// The reconcile that sees the timeout cannot write the status.
	var refuse atomic.Bool
	refuse.Store(true)
	watching, err := client.NewWithWatch(suite.Config, client.Options{Scheme: suite.Scheme})
	p.g.Expect(err).NotTo(HaveOccurred())
	c := interceptor.NewClient(watching, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" && refuse.CompareAndSwap(true, false) {
				return apierrors.NewInternalError(errors.New("status write lost"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	p.r, p.clock = newReconcilerWith(c, p.created, true)
	timedOut := 4*time.Second + 5*time.Minute
	p.clock.SetTime(p.created.Add(timedOut))
	_, err = p.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p.bj)})
	p.g.Expect(err).To(MatchError(ContainSubstring("status write lost")))
	p.g.Expect(refuse.Load()).To(BeFalse(), "the status write was tried")

	res := p.at(timedOut + 200*time.Millisecond)
	failure := p.get().Status.LastFailure
	p.g.Expect(failure).NotTo(BeNil(), "the failed run is recorded")
	p.g.Expect(failure.Run).To(Equal(second))
	p.g.Expect(failure.Reason).To(Equal(v1alpha1.BackupJobFenceTimeoutReason))
	last := p.condition(v1alpha1.BackupJobLastRunSucceededCondition)
	p.g.Expect(last.Status).To(Equal(metav1.ConditionFalse))
	p.g.Expect(last.Reason).To(Equal(v1alpha1.BackupJobFenceTimeoutReason))
	p.g.Expect(p.cluster().Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceByAnnotation, second), "removed once the failure is recorded")
	p.g.Expect(res.RequeueAfter).To(And(BeNumerically(">", 0), BeNumerically("<=", time.Second)), "back soon to remove it")

	p.at(timedOut + 1200*time.Millisecond)
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation))
	p.g.Expect(p.cluster().Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceByAnnotation))
	p.g.Expect(p.get().Status.LastFailure.Run).To(Equal(second))
}
