package backupjob

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/pgbackup"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/podsecurity"
)

// storeCluster is a PostgresCluster with an object store.
func storeCluster() *v1alpha1.PostgresCluster {
	return &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
		Spec: v1alpha1.PostgresClusterSpec{Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("5Gi")},
			Backup: &v1alpha1.PostgresBackupSpec{ObjectStore: v1alpha1.PostgresObjectStore{
				Endpoint: "http://seaweedfs.storage:8333/", Bucket: "backups", CredentialsSecret: "s3", CASecret: "s3-ca",
			}}}}
}

// The object-store Job runs the command `instance basebackup-to-store`
// parses, against the primary's stable name, with the backup role's
// password and the store of the cluster's spec.backup from their Secrets,
// mounts no claim, and meets the restricted Pod Security Standard.
func TestDesiredStoreBackupJob(t *testing.T) {
	g := NewWithT(t)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "u1"}}
	pg := storeCluster()
	rn := newRun("nightly", time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC), "now")
	job := desiredStoreBackupJob(bj, rn, pg, "db-1", baseBackupOptions{operatorImage: "example.com/platform-operator:v2", clusterDomain: "cluster.local"})

	pod := job.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("postgres:15"))
	g.Expect(c.Name).To(Equal(string(pgspec.ToolStoreBackup)), "the container whose termination message is read")
	g.Expect(c.Command[:3]).To(Equal([]string{pgspec.ManagerPath, "instance", "basebackup-to-store"}))
	secrets := map[string]string{}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			secrets[e.Name] = ref.Name + "/" + ref.Key
			env[e.Name] = "from " + ref.Name
			continue
		}
		env[e.Name] = e.Value
	}
	g.Expect(secrets).To(Equal(map[string]string{
		pgspec.EnvPassword:                           "db-backup/password",
		pgspec.EnvCACert:                             "db-server/ca.crt",
		pgspec.ArchiveStore + "S3_ACCESS_KEY_ID":     "s3/" + v1alpha1.ObjectStoreAccessKeyIDKey,
		pgspec.ArchiveStore + "S3_SECRET_ACCESS_KEY": "s3/" + v1alpha1.ObjectStoreSecretAccessKeyKey,
		pgspec.ArchiveStore + "S3_CA_BUNDLE":         "s3-ca/" + v1alpha1.ObjectStoreCAKey,
	}), "every secret from a Secret, none in the Job")
	opts, err := instance.ParseStoreBackupOptions(c.Command[3:], func(k string) string { return env[k] }, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.Host).To(Equal("db-1.db.shop.svc.cluster.local"))
	g.Expect(opts.Label).To(Equal(rn.name), "the backup is named after the run in the store")
	g.Expect(opts.Cluster).To(Equal("db"))
	g.Expect(opts.Namespace).To(Equal("shop"))
	g.Expect(opts.Location.Bucket).To(Equal("backups"))
	g.Expect(opts.Location.Prefix).To(Equal("shop/db"), "the cluster's path, where its WAL is archived")
	g.Expect(opts.Location.Compress).To(BeTrue(), "gzip unless the store says none")

	for _, v := range pod.Volumes {
		g.Expect(v.PersistentVolumeClaim).To(BeNil(), "no claim: the copy goes to the store")
	}
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(podsecurity.Restricted(podsecurity.VersionOf("v1.37.2"), &job.Spec.Template.ObjectMeta, &pod)).To(BeEmpty())
	g.Expect(job.OwnerReferences).To(HaveLen(1))
	g.Expect(job.Labels).To(HaveKeyWithValue(RunLabel, rn.name))
	g.Expect(job.Annotations).To(HaveKeyWithValue(RunNowAnnotation, "now"))
	g.Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(pgspec.ToolLabel, string(pgspec.ToolStoreBackup)))

	record := desiredStoreBackupRecord(bj, rn, pg, &v1alpha1.PostgresInstanceStatus{Name: "db-1", Timeline: 2})
	g.Expect(record.Name).To(Equal(rn.name))
	g.Expect(record.Labels).To(HaveKeyWithValue(RunLabel, rn.name))
	g.Expect(record.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"),
		HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-1"), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "2"),
		HaveKeyWithValue(MadeByAnnotation, "u1"), HaveKeyWithValue(v1alpha1.BackupObjectStoreAnnotation, "http://seaweedfs.storage:8333/backups/shop/db")))
	g.Expect(record.OwnerReferences).To(BeEmpty(), "the backup it records outlives the BackupJob")
	g.Expect(isBackup("nightly", record)).To(BeTrue())
	b := recordBackup(record)
	g.Expect([]any{b.kind, b.result, b.scheduled, b.runNow}).To(Equal([]any{v1alpha1.ObjectStoreBackup, v1alpha1.BackupRunning, rn.scheduled, "now"}))
}

// A record tells its backup's result and, once the Job reported it, its
// size.
func TestRecordBackup(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		result              v1alpha1.BackupResult
		recorded            bool
		size                string
	}{
		"running":              {nil, nil, v1alpha1.BackupRunning, false, ""},
		"succeeded, with size": {map[string]string{ResultLabel: "Succeeded"}, map[string]string{pgbackup.StoreSizeAnnotation: "30Mi"}, v1alpha1.BackupSucceeded, true, "30Mi"},
		"failed":               {map[string]string{ResultLabel: "Failed"}, nil, v1alpha1.BackupFailed, true, ""},
		"a result of no kind":  {map[string]string{ResultLabel: "Maybe"}, map[string]string{pgbackup.StoreSizeAnnotation: "lots"}, v1alpha1.BackupRunning, false, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b := recordBackup(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Labels: tc.labels, Annotations: tc.annotations}})
			g.Expect(b.result).To(Equal(tc.result))
			g.Expect(b.recorded).To(Equal(tc.recorded))
			if tc.size == "" {
				g.Expect(b.size).To(BeNil())
				return
			}
			g.Expect(b.size.Cmp(resource.MustParse(tc.size))).To(BeZero())
		})
	}
}

// A cluster without spec.backup skips the runs of an objectStore target
// and says which field is missing; other targets do not care.
func TestObjectStoreSourceProblem(t *testing.T) {
	g := NewWithT(t)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"}, Spec: v1alpha1.BackupJobSpec{
		Source: v1alpha1.BackupSource{PostgresCluster: "db"}, Target: &v1alpha1.BackupTarget{ObjectStore: &v1alpha1.BackupObjectStoreTarget{}}}}
	obs := &observation{postgres: postgresObservation{cluster: storeCluster()}}
	g.Expect(obs.sourceProblem(bj, true)).To(BeNil())

	obs.postgres.cluster.Spec.Backup = nil
	problem := obs.sourceProblem(bj, true)
	g.Expect(problem).NotTo(BeNil())
	g.Expect(problem.Reason).To(Equal(v1alpha1.BackupJobObjectStoreMissingReason))
	g.Expect(problem.Message).To(And(ContainSubstring("spec.backup.objectStore"), ContainSubstring("PostgresCluster db")))
	g.Expect(blocksReady(problem)).To(BeTrue(), "no run can start until the cluster has a store")

	bj.Spec.Target = &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}}
	g.Expect(obs.sourceProblem(bj, true)).To(BeNil(), "a base backup into a claim needs no store")
}
