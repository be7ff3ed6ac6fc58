package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
)

// record is the record of the object-store backup of run name.
func (p *pgFixture) record(name string) *corev1.ConfigMap {
	p.t.Helper()
	cm := &corev1.ConfigMap{}
	p.g.Expect(k8sClient.Get(p.t.Context(), client.ObjectKey{Namespace: p.ns, Name: name}, cm)).To(Succeed())
	return cm
}

// succeedStoreRun ends the Job of run name as a pod of `instance
// basebackup-to-store` that stored 30 MiB would.
func (p *pgFixture) succeedStoreRun(name string) {
	p.t.Helper()
	p.podOfJob(name, "pg-basebackup-store", corev1.PodSucceeded, 0,
		`{"startLSN":"0/A000028","endLSN":"0/A000100","timeline":1,"fromStandby":false,"backupID":"`+name+`","size":31457280}`)
	p.finishJob(name, true)
}

// An objectStore run of a cluster without spec.backup is skipped, and
// Degraded names the field; once the cluster has a store, a run records
// its backup in a ConfigMap of its name and makes a Job that streams the
// primary (not the most caught-up replica, as a claim's base backup
// would) into the cluster's store, with no claim. The Job's result and its
// pod's message are recorded on the record and listed in status as an
// ObjectStore backup with its size. Retention leaves the record of a
// backup it no longer keeps, and says so.
func TestPostgresObjectStoreRun(t *testing.T) {
	p := newPostgresFixtureWith(t, 3, false, &v1alpha1.BackupTarget{ObjectStore: &v1alpha1.BackupObjectStoreTarget{}})
	p.runNow("first")
	p.at(time.Second)
	p.g.Expect(p.jobs()).To(BeEmpty())
	degraded := p.condition(v1alpha1.BackupJobDegradedCondition)
	p.g.Expect(degraded.Reason).To(Equal(v1alpha1.BackupJobObjectStoreMissingReason))
	p.g.Expect(degraded.Message).To(ContainSubstring("spec.backup.objectStore"))

	pg := p.cluster()
	pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: v1alpha1.PostgresObjectStore{
		Endpoint: "http://seaweedfs.storage:8333", Bucket: "backups", CredentialsSecret: "s3"}}
	p.g.Expect(k8sClient.Update(t.Context(), pg)).To(Succeed())
	p.runNow("second")
	p.at(2 * time.Second)
	run := p.runName(2 * time.Second)

	p.g.Expect(p.claims()).To(BeEmpty(), "the copy goes to the store, not into a claim")
	record := p.record(run)
	p.g.Expect(record.Labels).To(And(HaveKeyWithValue(backupjob.RunLabel, run), HaveKeyWithValue(v1alpha1.BackupJobLabel, "nightly")))
	p.g.Expect(record.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-1"),
		HaveKeyWithValue(v1alpha1.BackupObjectStoreAnnotation, "http://seaweedfs.storage:8333/backups/"+p.ns+"/db")))
	jobs := p.jobs()
	p.g.Expect(jobs).To(HaveLen(1))
	pod := jobs[0].Spec.Template.Spec
	c := pod.Containers[0]
	p.g.Expect(c.Name).To(Equal("pg-basebackup-store"))
	p.g.Expect(c.Command).To(ContainElements("basebackup-to-store", "db-1.db."+p.ns+".svc.cluster.local", "--label", run))
	p.g.Expect(c.Env).To(ContainElements(corev1.EnvVar{Name: "ARCHIVE_S3_BUCKET", Value: "backups"},
		HaveField("ValueFrom.SecretKeyRef.Name", "s3"), HaveField("ValueFrom.SecretKeyRef.Name", "db-backup")))
	for _, v := range pod.Volumes {
		p.g.Expect(v.PersistentVolumeClaim).To(BeNil())
	}
	p.g.Expect(p.get().Status.Backups).To(ConsistOf(And(HaveField("Name", run), HaveField("Kind", v1alpha1.ObjectStoreBackup),
		HaveField("Result", v1alpha1.BackupRunning))))

	p.succeedStoreRun(run)
	p.at(3 * time.Second)
	record = p.record(run)
	p.g.Expect(record.Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"))
	p.g.Expect(record.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupStartLSNAnnotation, "0/A000028"),
		HaveKeyWithValue(v1alpha1.BackupEndLSNAnnotation, "0/A000100"), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1")))
	status := p.get().Status
	p.g.Expect(status.Backups).To(HaveLen(1))
	p.g.Expect(status.Backups[0].Result).To(Equal(v1alpha1.BackupSucceeded))
	p.g.Expect(status.Backups[0].Size).To(HaveValue(Equal(resource.MustParse("30Mi"))))
	p.g.Expect(p.condition(v1alpha1.BackupJobLastRunSucceededCondition).Status).To(Equal(metav1.ConditionTrue))
	p.g.Expect(p.condition(v1alpha1.BackupJobDegradedCondition).Status).To(Equal(metav1.ConditionFalse))

	bj := p.get()
	bj.Spec.Retention = &v1alpha1.BackupRetention{KeepLast: ptr.To[int32](1)}
	bj.Spec.RunNow = "third"
	p.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	p.at(4 * time.Second)
	next := p.runName(4 * time.Second)
	p.succeedStoreRun(next)
	p.at(5 * time.Second)
	p.g.Expect(p.record(run).DeletionTimestamp).To(BeNil(), "deleting the record would delete nothing in the store")
	p.g.Expect(p.get().Status.Backups).To(HaveLen(2))
	retention := p.condition(v1alpha1.BackupJobRetentionAppliedCondition)
	p.g.Expect(retention.Message).To(ContainSubstring("object-store backups the policy no longer keeps (" + run + ")"))
}

// The restore drill of an object-store backup restores that backup, by its
// name, from the source cluster's store into a temporary cluster that
// archives nothing, runs the query once the cluster is Healthy with its
// own passwords, records the result on the backup's record and deletes the
// temporary cluster. A source whose store moved holds the next drill,
// saying so.
func TestPostgresObjectStoreDrill(t *testing.T) {
	p := newPostgresFixtureWith(t, 3, false, &v1alpha1.BackupTarget{ObjectStore: &v1alpha1.BackupObjectStoreTarget{}})
	pg := p.cluster()
	store := v1alpha1.PostgresObjectStore{Endpoint: "http://seaweedfs.storage:8333", Bucket: "backups", CredentialsSecret: "s3"}
	pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: store}
	p.g.Expect(k8sClient.Update(t.Context(), pg)).To(Succeed())
	bj := p.get()
	bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) > 0 FROM orders"}
	p.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	p.runNow("first")
	p.at(time.Second)
	run := p.runName(time.Second)
	p.succeedStoreRun(run)
	p.at(2 * time.Second)

	drills := &v1alpha1.PostgresClusterList{}
	p.g.Expect(k8sClient.List(t.Context(), drills, client.InNamespace(p.ns), client.MatchingLabels{backupjob.DrillLabel: run})).To(Succeed())
	p.g.Expect(drills.Items).To(HaveLen(1), "a temporary cluster restored from the backup in the store")
	drill := drills.Items[0]
	from := drill.Spec.Bootstrap.FromBackup
	p.g.Expect(from.BackupJob).To(BeEmpty())
	p.g.Expect(from.Name).To(Equal(run), "that backup, not the newest")
	p.g.Expect(from.ObjectStore).To(HaveValue(And(HaveField("Endpoint", store.Endpoint), HaveField("Bucket", "backups"),
		HaveField("Path", p.ns+"/db"), HaveField("CredentialsSecret", "s3"))), "the source's store, its path made explicit")
	p.g.Expect(from.TargetTime).To(BeNil(), "the whole archive after the backup is replayed")
	p.g.Expect(drill.Spec.Backup).To(BeNil(), "a drill archives nothing")
	p.g.Expect(p.condition(v1alpha1.BackupJobVerifiedCondition).Reason).To(Equal(v1alpha1.BackupJobVerifyPendingReason))

	drill.Status.Phase, drill.Status.CurrentPrimary = v1alpha1.PostgresHealthy, drill.Name+"-1"
	drill.Status.Credentials.AppliedVersion = "1"
	p.g.Expect(k8sClient.Status().Update(t.Context(), &drill)).To(Succeed())
	p.at(3 * time.Second)
	verify := backupjob.DrillName(p.bj.Name, p.created.Add(time.Second))
	p.g.Expect(p.jobs()).To(ContainElement(HaveField("Name", verify)), "the query runs once the cluster is Healthy with its own passwords")
	p.finishJob(verify, true)
	p.at(4 * time.Second)
	verified := p.condition(v1alpha1.BackupJobVerifiedCondition)
	p.g.Expect(verified.Status).To(Equal(metav1.ConditionTrue), verified.Message)
	p.g.Expect(p.record(run).Annotations).To(HaveKeyWithValue(backupjob.VerifiedAnnotation, "Passed"), "the result, on the backup's record")
	p.g.Eventually(func() error {
		return k8sClient.Get(t.Context(), client.ObjectKeyFromObject(&drill), &v1alpha1.PostgresCluster{})
	}).Should(Satisfy(apierrors.IsNotFound), "the temporary cluster is deleted")

	// The store moved: the next backup is in the new place, but a drill of
	// one written to the old place would read the new place.
	pg = p.cluster()
	pg.Spec.Backup.ObjectStore.Path = "moved/db"
	p.g.Expect(k8sClient.Update(t.Context(), pg)).To(Succeed())
	record := p.record(run)
	delete(record.Annotations, backupjob.VerifiedAnnotation)
	p.g.Expect(k8sClient.Update(t.Context(), record)).To(Succeed())
	p.at(5 * time.Second)
	degraded := p.condition(v1alpha1.BackupJobDegradedCondition)
	p.g.Expect(degraded.Reason).To(Equal(v1alpha1.BackupJobObjectStoreMissingReason))
	p.g.Expect(degraded.Message).To(ContainSubstring("the restore drill of backup " + run + " waits: the backup was written to http://seaweedfs.storage:8333/backups/" + p.ns + "/db"))
	p.g.Expect(k8sClient.List(t.Context(), drills, client.InNamespace(p.ns), client.MatchingLabels{backupjob.DrillLabel: run})).To(Succeed())
	p.g.Expect(drills.Items).To(BeEmpty(), "no drill of the wrong place")
}
