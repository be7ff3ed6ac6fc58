package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

// pgWith is a three-instance cluster, its status as the operator writes
// it when healthy, changed by change.
func pgWith(change func(*v1alpha1.PostgresCluster)) *v1alpha1.PostgresCluster {
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Generation: 2},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1},
		Status: v1alpha1.PostgresClusterStatus{
			ObservedGeneration: 2, Phase: v1alpha1.PostgresHealthy, ReadyInstances: "3/3",
			CurrentPrimary: "db-1", TargetPrimary: "db-1", WriteService: "db-rw", ReadService: "db-ro",
			Instances: []v1alpha1.PostgresInstanceStatus{
				{Name: "db-1", Role: "primary", Ready: true, Timeline: 2, ReceivedLSN: "0/5000060"},
				{Name: "db-2", Role: "replica", Ready: true, Timeline: 2, ReceivedLSN: "0/5000060", ReplayedLSN: "0/5000060",
					Message: "standby of db-1"},
				{Name: "db-3", Role: "replica", Ready: true, Timeline: 2, ReceivedLSN: "0/5000000", ReplayedLSN: "0/4FF0000", LagBytes: 65632},
			},
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: "True", Reason: "Available", ObservedGeneration: 2, LastTransitionTime: *at(-3 * time.Minute),
					Message: "3 of 3 instances ready; primary db-1"},
				{Type: "Degraded", Status: "False", Reason: "AsExpected", ObservedGeneration: 2, LastTransitionTime: *at(-time.Hour)},
			},
		},
	}
	if change != nil {
		change(pg)
	}
	return pg
}

func TestPostgresStatus(t *testing.T) {
	nightly := v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "db-nightly"},
		Status: v1alpha1.BackupJobStatus{
			LastSuccessfulTime: at(-2 * time.Hour), NextScheduleTime: at(22 * time.Hour), BackupCount: 3,
			Backups:    []v1alpha1.Backup{{Name: "db-nightly-2", Result: v1alpha1.BackupFailed}},
			Conditions: []metav1.Condition{{Type: "Verified", Status: "True", Reason: "DrillPassed"}},
			LastFailure: &v1alpha1.BackupRunFailure{Run: "db-nightly-2", Reason: "JobFailed",
				ScheduledTime: *at(-time.Hour), Message: "Job db-nightly-2 failed: BackoffLimitExceeded"},
		},
	}
	adhoc := v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "db-adhoc"},
		Spec:       v1alpha1.BackupJobSpec{Suspend: new(true)},
		Status: v1alpha1.BackupJobStatus{Conditions: []metav1.Condition{
			{Type: "Verified", Status: "Unknown", Reason: v1alpha1.BackupJobVerifyNotConfiguredReason}}},
	}
	tests := []struct {
		name    string
		pg      *v1alpha1.PostgresCluster
		backups []v1alpha1.BackupJob
		want    []string // lines, or parts of one line, that must show
		notWant []string
	}{
		{
			name: "healthy",
			pg:   pgWith(nil),
			want: []string{
				"PostgresCluster shop/db: Healthy",
				"Primary:     db-1",
				"Instances:   3/3 ready of 3, synchronous 1 (required)",
				"Services:    db-rw (writes), db-ro (reads)",
				"db-1      primary  true   2   0/5000060  -         accepting writes",
				"db-2      replica  true   2   0/5000060  0 B       streaming",
				"db-3      replica  true   2   0/4FF0000  64.1 KiB  streaming",
				"Backups: no BackupJob has this cluster as its source",
				"  Ready             True    Available                3m\n      3 of 3 instances ready; primary db-1\n",
			},
			notWant: []string{"Not ready", "Fenced:", "not caught up", "db-2: standby of db-1"},
		},
		{
			name: "switching over, one instance fenced, status behind the spec",
			pg: pgWith(func(pg *v1alpha1.PostgresCluster) {
				pg.Generation = 3
				pg.Status.Phase = v1alpha1.PostgresSwitchingOver
				pg.Status.TargetPrimary = "db-2"
				pg.Spec.FencedInstances = []string{"db-3"}
				pg.Status.Instances[2] = v1alpha1.PostgresInstanceStatus{Name: "db-3", Role: "replica", Fenced: true, Timeline: 2,
					Message: "fenced: spec.fencedInstances"}
				pg.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: "SwitchingOver", ObservedGeneration: 2,
					Message: "Switching over from db-1 to db-2", LastTransitionTime: *at(-5 * time.Second)}
			}),
			want: []string{
				"PostgresCluster shop/db: SwitchingOver",
				"  Not ready: Switching over from db-1 to db-2",
				"Primary:     db-1, being handed to db-2",
				"Fenced:      db-3 (spec.fencedInstances)",
				"Status is of generation 2; the spec is at 3",
				"fenced",
				"  db-3: fenced: spec.fencedInstances",
				"SwitchingOver            5s  (of gen. 2, not 3)",
			},
		},
		{
			name:    "backed up",
			pg:      pgWith(nil),
			backups: []v1alpha1.BackupJob{nightly, adhoc},
			want: []string{
				"db-adhoc    never         <none>  0        no drills  none (suspended)",
				"BACKUPJOB   LAST SUCCESS  NEWEST  BACKUPS  VERIFIED   NEXT RUN",
				"db-nightly  120m ago      Failed  3        passed     in 22h",
				"db-nightly: last failure db-nightly-2 (JobFailed) 60m ago: Job db-nightly-2",
			},
		},
		{
			name: "archiving, failing",
			pg: pgWith(func(pg *v1alpha1.PostgresCluster) {
				pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{ObjectStore: v1alpha1.PostgresObjectStore{Endpoint: "https://s3.example.com", Bucket: "wal"}}
				pg.Status.Archiving = &v1alpha1.PostgresArchivingStatus{LastArchivedWAL: "000000020000000000000005", LastArchivedAt: at(-2 * time.Minute),
					LastFailedWAL: "000000020000000000000006", LastFailedAt: at(-time.Minute), LastFailure: "connection refused", PendingWAL: 4}
				pg.Status.Conditions = append(pg.Status.Conditions, metav1.Condition{Type: "ContinuousArchiving", Status: "False", Reason: "ArchiveFailing"})
			}),
			want: []string{"Archiving:   to s3://wal at https://s3.example.com: 000000020000000000000005\n",
				"             archived 2m ago, 4 waiting; FAILING since 60s ago: connection"},
		},
		{
			name: "a certificate",
			pg: pgWith(func(pg *v1alpha1.PostgresCluster) {
				pg.Status.TLS = &v1alpha1.PostgresTLSStatus{Issuer: "corporate", NotAfter: at(90*24*time.Hour + time.Hour)}
			}),
			want: []string{"TLS:         certificate of corporate, ends " + now.Add(90*24*time.Hour+time.Hour).UTC().Format(time.DateOnly) + " (in 90d)\n"},
		},
		{
			name: "a certificate that ended",
			pg: pgWith(func(pg *v1alpha1.PostgresCluster) {
				pg.Status.TLS = &v1alpha1.PostgresTLSStatus{Issuer: "corporate", NotAfter: at(-time.Hour)}
			}),
			want: []string{"(ended)\n"},
		},
		{
			name: "not reported yet",
			pg: pgWith(func(pg *v1alpha1.PostgresCluster) {
				pg.Status = v1alpha1.PostgresClusterStatus{}
			}),
			want: []string{
				"PostgresCluster shop/db: <none>",
				"Primary:     <none>",
				"Instances: none reported yet",
				"none yet: the operator has not reported on this object",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			PostgresStatus(&out, tt.pg, tt.backups, now)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("missing %q in:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("unexpected %q in:\n%s", w, out.String())
				}
			}
			fits(t, out.String())
		})
	}
}

// fits fails the test for a line wider than Width.
func fits(t *testing.T, text string) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if len([]rune(line)) > Width {
			t.Errorf("line of %d columns: %q", len([]rune(line)), line)
		}
	}
}
