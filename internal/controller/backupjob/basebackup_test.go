package backupjob

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/podsecurity"
)

// The base backup Job runs the command `instance basebackup` parses, as the
// postgres user, with the backup role's password from its Secret, into the
// run's claim only, and meets the restricted Pod Security Standard.
func TestDesiredBaseBackupJob(t *testing.T) {
	g := NewWithT(t)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "u1"}}
	pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
		Spec: v1alpha1.PostgresClusterSpec{Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("5Gi"), StorageClassName: ptr.To("fast")}}}
	rn := newRun("nightly", time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC), "")
	job := desiredBaseBackupJob(bj, rn, pg, "db-2", baseBackupOptions{operatorImage: "example.com/platform-operator:v2", clusterDomain: "cluster.local"})

	pod := job.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("postgres:15"))
	g.Expect(c.Command[:3]).To(Equal([]string{pgspec.ManagerPath, "instance", "basebackup"}))
	opts, err := instance.ParseBaseBackupOptions(c.Command[3:], func(k string) string {
		if k == pgspec.EnvPassword {
			return "from the Secret"
		}
		return ""
	}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.Host).To(Equal("db-2.db.shop.svc.cluster.local"))
	g.Expect(opts.Dir).To(Equal("/backup/pgdata"))
	g.Expect(opts.Label).To(Equal(rn.name))
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: pgspec.EnvPassword, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db-backup"}, Key: "password"}}}))
	g.Expect(pod.InitContainers[0].Image).To(Equal("example.com/platform-operator:v2"))
	g.Expect(*pod.SecurityContext.RunAsUser).To(Equal(pgspec.UID))
	var claims []string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			g.Expect(v.PersistentVolumeClaim.ReadOnly).To(BeFalse())
		}
	}
	g.Expect(claims).To(Equal([]string{rn.name}), "the run's claim, and no instance's")
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse(), "a copy needs no credentials for the Kubernetes API")
	g.Expect(podsecurity.Restricted(podsecurity.VersionOf("v1.37.2"), &job.Spec.Template.ObjectMeta, &pod)).To(BeEmpty())
	g.Expect(job.OwnerReferences).To(HaveLen(1))
	g.Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(pgspec.ToolLabel, string(pgspec.ToolBaseBackup)), "what the pods are found by")

	claim := desiredBaseBackupClaim(bj, rn, pg, &v1alpha1.PostgresInstanceStatus{Name: "db-2", Timeline: 3})
	g.Expect(claim.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("5Gi")), "the cluster's size")
	g.Expect(*claim.Spec.StorageClassName).To(Equal("fast"), "the class a restore clones it in")
	g.Expect(claim.Annotations).To(And(HaveKeyWithValue(v1alpha1.BackupSourceClusterAnnotation, "db"),
		HaveKeyWithValue(v1alpha1.BackupSourceInstanceAnnotation, "db-2"), HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "3")))
	g.Expect(claim.OwnerReferences).To(BeEmpty(), "a backup holds data: nothing is garbage-collected with the BackupJob")
}

// A PostgreSQL drill restores the backup into a temporary single-instance
// cluster that the BackupJob owns and whose deletion takes its claims; its
// Job runs the query that `instance verify` parses, as the restored
// cluster's owner.
func TestDesiredPostgresDrill(t *testing.T) {
	g := NewWithT(t)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "u1"},
		Spec: v1alpha1.BackupJobSpec{Verify: &v1alpha1.BackupVerify{SQL: "SELECT count(*) > 0 FROM orders"}}}
	source := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
		Spec: v1alpha1.PostgresClusterSpec{Image: "postgres:15.9", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("5Gi"), StorageClassName: ptr.To("fast")},
			Bootstrap: &v1alpha1.PostgresBootstrap{InitDB: &v1alpha1.PostgresInitDB{Owner: "shop", Database: "orders"}}}}
	b := &backup{name: "nightly-1796300000", scheduled: time.Unix(1796300000, 0), requested: resource.MustParse("5Gi")}

	drill := desiredDrillCluster(bj, b, source)
	g.Expect(len(drill.Name)).To(BeNumerically("<=", 50))
	g.Expect(drill.Name).To(Equal(drillClusterName(bj, b)), "a fixed name: a retry finds it")
	g.Expect(drill.Spec.Instances).To(BeEquivalentTo(1))
	g.Expect(drill.Spec.Image).To(Equal("postgres:15.9"))
	g.Expect(drill.Spec.Bootstrap.FromBackup).To(Equal(&v1alpha1.PostgresFromBackup{BackupJob: "nightly", Name: b.name, Owner: "shop", Database: "orders"}),
		"the owner and database the backup holds, as which the query runs")
	g.Expect(drill.Spec.DeletionPolicy).To(Equal(v1alpha1.DeleteClaims))
	g.Expect(drill.Annotations).To(HaveKeyWithValue(v1alpha1.PostgresConfirmDeleteAnnotation, drill.Name), "its claims go with it")
	g.Expect(*drill.Spec.Storage.StorageClassName).To(Equal("fast"))
	g.Expect(drill.OwnerReferences).To(ConsistOf(HaveField("UID", bj.UID)))

	drill.Namespace = "shop"
	job := desiredVerifyJob(bj, b, drill, baseBackupOptions{operatorImage: "example.com/platform-operator:v2", clusterDomain: "cluster.local"})
	c := job.Spec.Template.Spec.Containers[0]
	g.Expect(c.Command[:3]).To(Equal([]string{pgspec.ManagerPath, "instance", "verify"}))
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil:
			want := drill.Name + "-app"
			if e.Name == pgspec.EnvCACert {
				// The CA the query verifies the restored copy with.
				want = drill.Name + "-server"
			}
			g.Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal(want), "the restored cluster's own credentials and CA")
			env[e.Name] = "from " + e.ValueFrom.SecretKeyRef.Key
		default:
			env[e.Name] = e.Value
		}
	}
	opts, err := instance.ParseVerifyOptions(c.Command[3:], func(k string) string { return env[k] }, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.Host).To(Equal(drill.Name + "-1." + drill.Name + ".shop.svc.cluster.local"))
	g.Expect(opts.SQL).To(Equal("SELECT count(*) > 0 FROM orders"))
	g.Expect(opts.User).To(Equal("from username"))
	g.Expect(opts.Database).To(Equal("from dbname"))
	g.Expect(*job.Spec.BackoffLimit).To(BeZero(), "a query that fails once is the drill's answer")
	g.Expect(job.Labels).To(HaveKeyWithValue(DrillLabel, b.name))
	g.Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(pgspec.ToolLabel, string(pgspec.ToolVerify)))
	g.Expect(podsecurity.Restricted(podsecurity.VersionOf("v1.37.2"), &job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec)).To(BeEmpty())
}

// The drill of an object-store backup restores that backup, by its name in
// the store, from the source cluster's store with its path made explicit
// (the drill's own default path would be drill-HASH's), and archives
// nothing; it waits, saying why, when the source's store is gone or moved.
func TestDesiredStoreDrill(t *testing.T) {
	g := NewWithT(t)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop", UID: "u1"},
		Spec: v1alpha1.BackupJobSpec{Verify: &v1alpha1.BackupVerify{SQL: "SELECT true"}}}
	store := v1alpha1.PostgresObjectStore{Endpoint: "http://10.201.1.1:8333", Bucket: "wal", CredentialsSecret: "s3-keys", Compression: "gzip"}
	source := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
		Spec: v1alpha1.PostgresClusterSpec{Image: "postgres:15.9", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")},
			Backup: &v1alpha1.PostgresBackupSpec{ObjectStore: store}}}
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1796300000",
		Annotations: map[string]string{v1alpha1.BackupObjectStoreAnnotation: "http://10.201.1.1:8333/wal/shop/db"}}}
	b := &backup{name: record.Name, kind: v1alpha1.ObjectStoreBackup, object: record, size: ptr.To(resource.MustParse("30Mi"))}

	drill := desiredDrillCluster(bj, b, source)
	want := store.DeepCopy()
	want.Path = "shop/db"
	g.Expect(drill.Spec.Bootstrap.FromBackup).To(Equal(&v1alpha1.PostgresFromBackup{ObjectStore: want, Name: b.name, Owner: "app", Database: "app"}))
	g.Expect(drill.Spec.Backup).To(BeNil(), "a drill archives nothing, least of all onto its source's path")
	g.Expect(drill.Spec.Instances).To(BeEquivalentTo(1))
	g.Expect(drill.Spec.Storage.Size.String()).To(Equal("1Gi"), "at least the source's size")
	g.Expect(storeDrillProblem(b, source)).To(BeNil())

	message := func(c *cause) string {
		if c == nil {
			return ""
		}
		return c.Reason + ": " + c.Message
	}
	g.Expect(message(storeDrillProblem(b, nil))).To(ContainSubstring("ObjectStoreMissing: the restore drill of backup nightly-1796300000 waits"))
	g.Expect(message(storeDrillProblem(b, nil))).To(ContainSubstring("the cluster or its spec.backup is gone"))
	moved := source.DeepCopy()
	moved.Spec.Backup.ObjectStore.Path = "elsewhere"
	g.Expect(message(storeDrillProblem(b, moved))).To(
		ContainSubstring("written to http://10.201.1.1:8333/wal/shop/db, and PostgresCluster db's spec.backup.objectStore now names http://10.201.1.1:8333/wal/elsewhere"))
	g.Expect(storeDrillProblem(&backup{name: "claim", kind: v1alpha1.VolumeBackup}, nil)).To(BeNil(), "a volume backup's drill needs no store")

	// At its end: to the point in time its run marked, else no drill.
	bj.Spec.Verify.RecoveryTarget = v1alpha1.DrillToBackupEnd
	g.Expect(desiredDrillCluster(bj, b, source).Spec.Bootstrap.FromBackup.TargetTime).To(BeNil())
	_, why := drillPointInTime(b)
	g.Expect(why).To(ContainSubstring("its record has no example.com/point-in-time annotation"))
	record.Annotations[v1alpha1.BackupPointInTimeAnnotation] = "2026-12-08T01:02:04Z"
	target := desiredDrillCluster(bj, b, source).Spec.Bootstrap.FromBackup.TargetTime
	g.Expect(target).NotTo(BeNil())
	g.Expect(target.UTC().Format(time.RFC3339)).To(Equal("2026-12-08T01:02:04Z"))
	record.Annotations[v1alpha1.BackupPointInTimeAnnotation] = "soon"
	_, why = drillPointInTime(b)
	g.Expect(why).To(ContainSubstring(`annotation "soon" is not an RFC 3339 time`))
}
