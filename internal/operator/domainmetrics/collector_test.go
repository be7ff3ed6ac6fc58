package domainmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	examplev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
)

// at is a fixed time whose Unix seconds are easy to read in the expected
// exposition.
var at = time.Unix(1_800_000_000, 0).UTC()

func ts(offset time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(at.Add(offset))) }

// fixtures are one object of each kind, with every field the collector
// reads set, so that every metric has a series.
func fixtures() []client.Object {
	return []client.Object{
		&examplev1.Website{
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "docs", Generation: 2},
			Spec:       examplev1.WebsiteSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](3)},
			Status: examplev1.WebsiteStatus{ReadyReplicas: 2, Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 2},
				// About generation 1: it says nothing of the current spec.
				{Type: "Degraded", Status: metav1.ConditionTrue, ObservedGeneration: 1},
			}},
		},
		&v1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
			Spec:       v1alpha1.TenantSpec{Namespaces: []string{"team-a", "team-a-staging"}},
			Status: v1alpha1.TenantStatus{
				Namespaces: []v1alpha1.TenantNamespaceStatus{
					{Name: "team-a", Phase: v1alpha1.NamespaceActive},
					{Name: "team-a-staging", Phase: v1alpha1.NamespaceConflict},
				},
				Credentials: &v1alpha1.TenantCredentialsStatus{IssuedAt: ts(0), ExpiresAt: ts(24 * time.Hour)},
			},
		},
		&v1alpha1.BackupJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "nightly", Generation: 1},
			Spec:       v1alpha1.BackupJobSpec{Schedule: "0 * * * *", Source: v1alpha1.BackupSource{PostgresCluster: "pg"}},
			Status: v1alpha1.BackupJobStatus{
				LastSuccessfulTime: ts(-2 * time.Hour),
				LastFailure:        &v1alpha1.BackupRunFailure{Run: "nightly-1", ScheduledTime: metav1.NewTime(at.Add(-time.Hour)), Reason: "JobFailed"},
				LastScheduleTime:   ts(-time.Hour),
				NextScheduleTime:   ts(0),
				BackupCount:        4,
				MissedRuns:         1,
				Conditions: []metav1.Condition{
					{Type: v1alpha1.BackupJobVerifiedCondition, Status: metav1.ConditionFalse, ObservedGeneration: 1},
				},
			},
		},
		// An older BackupJob of the same cluster: the cluster's last backup
		// is the later of the two.
		&v1alpha1.BackupJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "weekly"},
			Spec:       v1alpha1.BackupJobSpec{Schedule: "0 0 * * 0", Source: v1alpha1.BackupSource{PostgresCluster: "pg"}},
			Status:     v1alpha1.BackupJobStatus{LastSuccessfulTime: ts(-48 * time.Hour)},
		},
		&v1alpha1.PostgresCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "pg"},
			Spec:       v1alpha1.PostgresClusterSpec{Instances: 2},
			Status: v1alpha1.PostgresClusterStatus{
				Phase:          v1alpha1.PostgresFailingOver,
				PromotionEpoch: 3,
				Instances: []v1alpha1.PostgresInstanceStatus{
					{Name: "pg-1", Role: "primary", Ready: true},
					{Name: "pg-2", Role: "replica", LagBytes: 16 << 20},
				},
				Conditions: []metav1.Condition{{Type: v1alpha1.PostgresPrimaryAvailableCondition, Status: metav1.ConditionFalse}},
			},
		},
		// A cluster that archives WAL, and failed to since it last did.
		&v1alpha1.PostgresCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "wal"},
			Spec:       v1alpha1.PostgresClusterSpec{Instances: 1},
			Status: v1alpha1.PostgresClusterStatus{
				Phase:     v1alpha1.PostgresHealthy,
				Instances: []v1alpha1.PostgresInstanceStatus{{Name: "wal-1", Role: "primary", Ready: true}},
				Archiving: &v1alpha1.PostgresArchivingStatus{
					LastArchivedWAL: "000000010000000000000007", LastArchivedAt: ts(-10 * time.Minute),
					LastFailedWAL: "000000010000000000000008", LastFailedAt: ts(-time.Minute), LastFailure: "connection refused",
					PendingWAL: 5,
				},
				TLS:        &v1alpha1.PostgresTLSStatus{Issuer: "corporate", NotAfter: ts(90 * 24 * time.Hour)},
				Conditions: []metav1.Condition{{Type: v1alpha1.PostgresContinuousArchivingCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PostgresArchiveFailingReason}},
			},
		},
	}
}

func fakeCache(t testing.TB, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := examplev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func TestCollectorExportsEachKindsState(t *testing.T) {
	c := New(fakeCache(t, fixtures()...), []string{Website, Tenant, BackupJob, PostgresCluster})
	want := `
# HELP platform_operator_backupjob_backups Backups of a BackupJob that exist, successful or not (status.backupCount).
# TYPE platform_operator_backupjob_backups gauge
platform_operator_backupjob_backups{name="nightly",namespace="db"} 4
platform_operator_backupjob_backups{name="weekly",namespace="db"} 0
# HELP platform_operator_backupjob_last_drill Result of a BackupJob's most recent restore drill, from its Verified condition: 1 for the result it had (Passed, Failed, or None when no drill finished or none is configured), 0 for the others.
# TYPE platform_operator_backupjob_last_drill gauge
platform_operator_backupjob_last_drill{name="nightly",namespace="db",result="Failed"} 1
platform_operator_backupjob_last_drill{name="nightly",namespace="db",result="None"} 0
platform_operator_backupjob_last_drill{name="nightly",namespace="db",result="Passed"} 0
platform_operator_backupjob_last_drill{name="weekly",namespace="db",result="Failed"} 0
platform_operator_backupjob_last_drill{name="weekly",namespace="db",result="None"} 1
platform_operator_backupjob_last_drill{name="weekly",namespace="db",result="Passed"} 0
# HELP platform_operator_backupjob_last_failure_timestamp_seconds The scheduled time of the most recent failed run of a BackupJob (status.lastFailure.scheduledTime), in seconds since the epoch; absent when none failed.
# TYPE platform_operator_backupjob_last_failure_timestamp_seconds gauge
platform_operator_backupjob_last_failure_timestamp_seconds{name="nightly",namespace="db"} 1.7999964e+09
# HELP platform_operator_backupjob_last_schedule_timestamp_seconds The scheduled time of the most recent scheduled run of a BackupJob (status.lastScheduleTime), in seconds since the epoch; absent before the first.
# TYPE platform_operator_backupjob_last_schedule_timestamp_seconds gauge
platform_operator_backupjob_last_schedule_timestamp_seconds{name="nightly",namespace="db"} 1.7999964e+09
# HELP platform_operator_backupjob_last_success_timestamp_seconds When the most recent successful run of a BackupJob finished (status.lastSuccessfulTime), in seconds since the epoch; absent before the first success.
# TYPE platform_operator_backupjob_last_success_timestamp_seconds gauge
platform_operator_backupjob_last_success_timestamp_seconds{name="nightly",namespace="db"} 1.7999928e+09
platform_operator_backupjob_last_success_timestamp_seconds{name="weekly",namespace="db"} 1.7998272e+09
# HELP platform_operator_backupjob_missed_runs Scheduled times of a BackupJob that got no run since it was created (status.missedRuns).
# TYPE platform_operator_backupjob_missed_runs gauge
platform_operator_backupjob_missed_runs{name="nightly",namespace="db"} 1
platform_operator_backupjob_missed_runs{name="weekly",namespace="db"} 0
# HELP platform_operator_backupjob_next_schedule_timestamp_seconds When the next run of a BackupJob is due (status.nextScheduleTime), in seconds since the epoch; absent while it is suspended or its schedule is invalid.
# TYPE platform_operator_backupjob_next_schedule_timestamp_seconds gauge
platform_operator_backupjob_next_schedule_timestamp_seconds{name="nightly",namespace="db"} 1.8e+09
# HELP platform_operator_condition Conditions of each object: 1, labelled with the condition's status; Unknown when the condition does not describe the object's current generation.
# TYPE platform_operator_condition gauge
platform_operator_condition{kind="backupjob",name="nightly",namespace="db",status="False",type="Verified"} 1
platform_operator_condition{kind="postgrescluster",name="pg",namespace="db",status="False",type="PrimaryAvailable"} 1
platform_operator_condition{kind="postgrescluster",name="wal",namespace="db",status="False",type="ContinuousArchiving"} 1
platform_operator_condition{kind="website",name="docs",namespace="web",status="False",type="Ready"} 1
platform_operator_condition{kind="website",name="docs",namespace="web",status="Unknown",type="Degraded"} 1
# HELP platform_operator_postgrescluster_archive_pending_wal WAL files a PostgresCluster's primary has written and not yet archived (status.archiving.pendingWAL): it keeps them on its volume until the object store has them; absent without status.archiving.
# TYPE platform_operator_postgrescluster_archive_pending_wal gauge
platform_operator_postgrescluster_archive_pending_wal{name="wal",namespace="db"} 5
# HELP platform_operator_postgrescluster_certificate_expiry_timestamp_seconds When the server certificate a PostgresCluster's instances are given ends (status.tls.notAfter), in seconds since the epoch: the operator renews its own a third of its life before; one the user brings (spec.tls) is the user's to renew.
# TYPE platform_operator_postgrescluster_certificate_expiry_timestamp_seconds gauge
platform_operator_postgrescluster_certificate_expiry_timestamp_seconds{name="wal",namespace="db"} 1.807776e+09
# HELP platform_operator_postgrescluster_continuous_archiving Reason of a PostgresCluster's ContinuousArchiving condition: 1 for the reason it has (Archiving, ArchiveFailing, Starting, NoPrimary), 0 for the others; absent without the condition (no spec.backup).
# TYPE platform_operator_postgrescluster_continuous_archiving gauge
platform_operator_postgrescluster_continuous_archiving{name="wal",namespace="db",reason="ArchiveFailing"} 1
platform_operator_postgrescluster_continuous_archiving{name="wal",namespace="db",reason="Archiving"} 0
platform_operator_postgrescluster_continuous_archiving{name="wal",namespace="db",reason="NoPrimary"} 0
platform_operator_postgrescluster_continuous_archiving{name="wal",namespace="db",reason="Starting"} 0
# HELP platform_operator_postgrescluster_instance_lag_bytes How far an instance's replay is behind the primary's current WAL position as last reported (status.instances[].lagBytes), by instance and its role (primary, replica, or empty before it reported).
# TYPE platform_operator_postgrescluster_instance_lag_bytes gauge
platform_operator_postgrescluster_instance_lag_bytes{instance="pg-1",name="pg",namespace="db",role="primary"} 0
platform_operator_postgrescluster_instance_lag_bytes{instance="pg-2",name="pg",namespace="db",role="replica"} 1.6777216e+07
platform_operator_postgrescluster_instance_lag_bytes{instance="wal-1",name="wal",namespace="db",role="primary"} 0
# HELP platform_operator_postgrescluster_instances_desired PostgreSQL instances a PostgresCluster asks for (spec.instances).
# TYPE platform_operator_postgrescluster_instances_desired gauge
platform_operator_postgrescluster_instances_desired{name="pg",namespace="db"} 2
platform_operator_postgrescluster_instances_desired{name="wal",namespace="db"} 1
# HELP platform_operator_postgrescluster_instances_ready Instances of a PostgresCluster that accept connections and, replicas, stream from the primary (status.instances[].ready).
# TYPE platform_operator_postgrescluster_instances_ready gauge
platform_operator_postgrescluster_instances_ready{name="pg",namespace="db"} 1
platform_operator_postgrescluster_instances_ready{name="wal",namespace="db"} 1
# HELP platform_operator_postgrescluster_last_backup_success_timestamp_seconds When the most recent successful backup of a PostgresCluster finished, the latest status.lastSuccessfulTime of the BackupJobs whose source it is, in seconds since the epoch; absent when none succeeded or BackupJobs are not served.
# TYPE platform_operator_postgrescluster_last_backup_success_timestamp_seconds gauge
platform_operator_postgrescluster_last_backup_success_timestamp_seconds{name="pg",namespace="db"} 1.7999928e+09
# HELP platform_operator_postgrescluster_last_archived_timestamp_seconds When the object store last confirmed a WAL file of a PostgresCluster (status.archiving.lastArchivedAt), in seconds since the epoch; absent before the first or without status.archiving.
# TYPE platform_operator_postgrescluster_last_archived_timestamp_seconds gauge
platform_operator_postgrescluster_last_archived_timestamp_seconds{name="wal",namespace="db"} 1.7999994e+09
# HELP platform_operator_postgrescluster_phase Phase of a PostgresCluster (status.phase): 1 for the phase it is in, 0 for the others, as kube_pod_status_phase.
# TYPE platform_operator_postgrescluster_phase gauge
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Degraded"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Deleting"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="FailingOver"} 1
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Healthy"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Hibernated"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Initializing"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="SwitchingOver"} 0
platform_operator_postgrescluster_phase{name="pg",namespace="db",phase="Upgrading"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Degraded"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Deleting"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="FailingOver"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Healthy"} 1
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Hibernated"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Initializing"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="SwitchingOver"} 0
platform_operator_postgrescluster_phase{name="wal",namespace="db",phase="Upgrading"} 0
# HELP platform_operator_postgrescluster_promotion_epoch Changes of a PostgresCluster's target primary (status.promotionEpoch): its increase counts failovers and switchovers.
# TYPE platform_operator_postgrescluster_promotion_epoch gauge
platform_operator_postgrescluster_promotion_epoch{name="pg",namespace="db"} 3
platform_operator_postgrescluster_promotion_epoch{name="wal",namespace="db"} 0
# HELP platform_operator_tenant_credentials_expiry_timestamp_seconds When the token in a Tenant's credentials Secret expires (status.credentials.expiresAt), in seconds since the epoch; absent when the Tenant has no credentials.
# TYPE platform_operator_tenant_credentials_expiry_timestamp_seconds gauge
platform_operator_tenant_credentials_expiry_timestamp_seconds{name="team-a",namespace=""} 1.8000864e+09
# HELP platform_operator_tenant_credentials_issued_timestamp_seconds When the token in a Tenant's credentials Secret was issued (status.credentials.issuedAt), in seconds since the epoch; with the expiry it gives the token's life, which the operator renews at 80 %.
# TYPE platform_operator_tenant_credentials_issued_timestamp_seconds gauge
platform_operator_tenant_credentials_issued_timestamp_seconds{name="team-a",namespace=""} 1.8e+09
# HELP platform_operator_tenant_namespaces_active Namespaces of a Tenant that are Active: the tenant's, with what its spec grants in place.
# TYPE platform_operator_tenant_namespaces_active gauge
platform_operator_tenant_namespaces_active{name="team-a",namespace=""} 1
# HELP platform_operator_tenant_namespaces_desired Namespaces a Tenant asks for (spec.namespaces).
# TYPE platform_operator_tenant_namespaces_desired gauge
platform_operator_tenant_namespaces_desired{name="team-a",namespace=""} 2
# HELP platform_operator_website_replicas_desired Pods a Website asks for (spec.replicas).
# TYPE platform_operator_website_replicas_desired gauge
platform_operator_website_replicas_desired{name="docs",namespace="web"} 3
# HELP platform_operator_website_replicas_ready Pods of a Website's Deployment that are ready to serve (status.readyReplicas).
# TYPE platform_operator_website_replicas_ready gauge
platform_operator_website_replicas_ready{name="docs",namespace="web"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}
}

// Only the kinds whose controllers run are listed: the cache holds no
// informer of the others, and listing one would start it.
func TestCollectorListsOnlyRunningKinds(t *testing.T) {
	c := New(fakeCache(t, fixtures()...), []string{PostgresCluster, "not-a-kind"})
	names := gatheredNames(t, c)
	for _, name := range names {
		if !strings.HasPrefix(name, "platform_operator_postgrescluster_") && name != "platform_operator_condition" {
			t.Errorf("exported %s, of a kind that does not run", name)
		}
	}
	// Without BackupJobs' controller, a cluster's last backup is not known.
	for _, name := range names {
		if name == "platform_operator_postgrescluster_last_backup_success_timestamp_seconds" {
			t.Errorf("exported %s without BackupJobs running", name)
		}
	}
}

func gatheredNames(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	return names
}
