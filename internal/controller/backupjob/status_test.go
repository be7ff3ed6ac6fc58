package backupjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit/kstatustest"
)

func statusBackup(name string, scheduled time.Time, result v1alpha1.BackupResult) *backup {
	return &backup{name: name, kind: v1alpha1.VolumeBackup, scheduled: scheduled, result: result, recorded: result != v1alpha1.BackupRunning,
		object: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// The conditions, each from what was observed: which run finished last,
// what blocks the BackupJob, what retention could not delete.
func TestComputeStatusConditions(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	failedJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-3", Annotations: map[string]string{ScheduledTimeAnnotation: t0.Add(3 * time.Hour).Format(time.RFC3339)}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}}}}
	source := &corev1.PersistentVolumeClaim{}
	tests := map[string]struct {
		obs       *observation
		sched     scheduleResult
		ret       retentionResult
		suspended bool
		want      map[string]string // condition type -> status/reason
		// kstatus is what Flux, Argo CD and kubectl wait make of it.
		kstatus status.Status
	}{
		"nothing ran yet": {
			kstatus: status.CurrentStatus,
			obs:     &observation{source: source},
			want:    map[string]string{"Ready": "True/Scheduled", "LastRunSucceeded": "Unknown/NoRunYet", "RetentionApplied": "True/Applied", "Verified": "Unknown/NotConfigured", "Degraded": "False/AsExpected"},
		},
		"the newest finished run failed, an older one succeeded": {
			kstatus: status.InProgressStatus,
			obs: &observation{source: source, backups: []*backup{
				statusBackup("nightly-2", t0.Add(2*time.Hour), v1alpha1.BackupFailed), statusBackup("nightly-1", t0.Add(time.Hour), v1alpha1.BackupSucceeded)}},
			want: map[string]string{"Ready": "False/LastRunFailed", "LastRunSucceeded": "False/JobFailed"},
		},
		"a failed run whose backup retention deleted still shows through its Job": {
			kstatus: status.InProgressStatus,
			obs: &observation{source: source, backups: []*backup{statusBackup("nightly-1", t0.Add(time.Hour), v1alpha1.BackupSucceeded)},
				runJobs: map[string]*batchv1.Job{"nightly-3": failedJob}},
			want: map[string]string{"LastRunSucceeded": "False/JobFailed"},
		},
		"running": {
			kstatus: status.CurrentStatus,
			obs:     &observation{source: source, backups: []*backup{statusBackup("nightly-4", t0, v1alpha1.BackupRunning)}},
			want:    map[string]string{"Ready": "True/Running", "LastRunSucceeded": "Unknown/NoRunYet"},
		},
		"suspended": {
			kstatus: status.CurrentStatus,
			obs:     &observation{source: source}, suspended: true,
			want: map[string]string{"Ready": "True/Suspended"},
		},
		"source missing": {
			kstatus: status.FailedStatus,
			obs:     &observation{},
			want:    map[string]string{"Ready": "False/SourceNotFound", "Degraded": "True/SourceNotFound"},
		},
		"unknown time zone": {
			kstatus: status.FailedStatus,
			obs:     &observation{source: source},
			sched:   scheduleResult{problem: &cause{Reason: v1alpha1.BackupJobUnknownTimeZoneReason, Message: "spec.timeZone: ..."}},
			ret:     retentionResult{skipped: &cause{Reason: v1alpha1.BackupJobUnknownTimeZoneReason}},
			want:    map[string]string{"Ready": "False/UnknownTimeZone", "RetentionApplied": "Unknown/UnknownTimeZone"},
		},
		"deletion blocked degrades but leaves Ready": {
			kstatus: status.FailedStatus,
			obs:     &observation{source: source},
			ret:     retentionResult{blocked: []string{"nightly-0 (held by example.com/x)"}},
			want:    map[string]string{"Ready": "True/Scheduled", "RetentionApplied": "False/DeletionBlocked", "Degraded": "True/DeletionBlocked"},
		},
		"too many missed runs": {
			kstatus: status.FailedStatus,
			obs:     &observation{source: source},
			sched:   scheduleResult{tooMany: true},
			want:    map[string]string{"Degraded": "True/TooManyMissedRuns"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			bj := testBackupJob()
			bj.Spec.Suspend = ptr.To(tt.suspended)
			if tt.obs.runJobs == nil {
				tt.obs.runJobs = map[string]*batchv1.Job{}
			}
			st := computeStatus(bj, tt.obs, tt.sched, tt.ret, nil, t0)
			if len(st.Conditions) != 7 {
				t.Fatalf("%d conditions, want all 7", len(st.Conditions))
			}
			bj.Status = st
			if got, message := kstatustest.Of(t, bj); got != tt.kstatus {
				t.Errorf("kstatus %s (%s), want %s", got, message, tt.kstatus)
			}
			for _, c := range st.Conditions {
				want, ok := tt.want[c.Type]
				if !ok {
					continue
				}
				if got := string(c.Status) + "/" + c.Reason; got != want {
					t.Errorf("%s: %s (%s), want %s", c.Type, got, c.Message, want)
				}
			}
		})
	}
}

// missedRuns is a running total: the reconcile adds what it counted.
func TestMissedRunsAccumulate(t *testing.T) {
	bj := testBackupJob()
	bj.Status.MissedRuns = 4
	status := computeStatus(bj, &observation{source: &corev1.PersistentVolumeClaim{}, runJobs: map[string]*batchv1.Job{}},
		scheduleResult{missedAdded: 3}, retentionResult{}, nil, time.Now())
	if status.MissedRuns != 7 {
		t.Errorf("missedRuns %d, want 7", status.MissedRuns)
	}
}

// A backup's size is listed once the backup has a result, not while it
// runs: the claim's capacity then is not the size of a copy.
func TestBackupSizeOnceFinished(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	size := resource.MustParse("2Gi")
	running, done, failed := statusBackup("nightly-3", t0, v1alpha1.BackupRunning), statusBackup("nightly-2", t0.Add(-time.Hour), v1alpha1.BackupSucceeded),
		statusBackup("nightly-1", t0.Add(-2*time.Hour), v1alpha1.BackupFailed)
	for _, b := range []*backup{running, done, failed} {
		b.size = &size
	}
	list := listBackups([]*backup{running, done, failed}, retentionResult{})
	if list[0].Size != nil {
		t.Errorf("running backup %s: size %s, want none yet", list[0].Name, list[0].Size)
	}
	for _, b := range list[1:] {
		if b.Size == nil || b.Size.String() != "2Gi" {
			t.Errorf("%s backup %s: size %v, want 2Gi", b.Result, b.Name, b.Size)
		}
	}
}

// A run whose snapshot the snapshot controller is retrying after an error
// is running, and Ready says what it retries.
func TestRunningSnapshotShowsTheErrorItRetries(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	retrying := statusBackup("nightly-4", t0, v1alpha1.BackupRunning)
	retrying.message = "VolumeSnapshot nightly-4: the snapshot controller reports the error \"timed out\" and retries until 2026-03-01T08:00:00Z"
	obs := &observation{source: &corev1.PersistentVolumeClaim{}, backups: []*backup{retrying}, runJobs: map[string]*batchv1.Job{}}
	status := computeStatus(testBackupJob(), obs, scheduleResult{}, retentionResult{}, nil, t0)
	for _, c := range status.Conditions {
		if c.Type == v1alpha1.BackupJobReadyCondition {
			if c.Reason != v1alpha1.BackupJobRunningReason || c.Message != "Running: nightly-4; "+retrying.message {
				t.Errorf("Ready: %s: %s", c.Reason, c.Message)
			}
			return
		}
	}
	t.Fatal("no Ready condition")
}

// status.lastFailure is the most recent failed run: a newer failure
// replaces it, a newer success leaves it, and the run itself succeeding
// after all (a snapshot ready past its deadline) clears it.
func TestLastFailure(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	recorded := &v1alpha1.BackupRunFailure{Run: "nightly-2", ScheduledTime: metav1.NewTime(t0.Add(2 * time.Hour)), Reason: v1alpha1.BackupJobJobFailedReason}
	observed := func(backups ...*backup) *observation {
		return &observation{backups: backups, runJobs: map[string]*batchv1.Job{}}
	}
	tests := []struct {
		name     string
		obs      *observation
		previous *v1alpha1.BackupRunFailure
		want     string // the run lastFailure names, "" for none
	}{
		{"none failed", observed(statusBackup("nightly-1", t0, v1alpha1.BackupSucceeded)), nil, ""},
		{"one failed", observed(statusBackup("nightly-1", t0, v1alpha1.BackupFailed)), nil, "nightly-1"},
		{"kept once its objects are gone", observed(), recorded, "nightly-2"},
		{"an older failure does not replace it", observed(statusBackup("nightly-1", t0, v1alpha1.BackupFailed)), recorded, "nightly-2"},
		{"a newer failure does", observed(statusBackup("nightly-3", t0.Add(3*time.Hour), v1alpha1.BackupFailed)), recorded, "nightly-3"},
		{"a newer success leaves it", observed(statusBackup("nightly-3", t0.Add(3*time.Hour), v1alpha1.BackupSucceeded)), recorded, "nightly-2"},
		{"the run succeeded after all", observed(statusBackup("nightly-2", t0.Add(2*time.Hour), v1alpha1.BackupSucceeded)), recorded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lastFailure(tt.obs, tt.previous)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("lastFailure %s, want none", got.Run)
			case tt.want != "" && (got == nil || got.Run != tt.want):
				t.Errorf("lastFailure %v, want %s", got, tt.want)
			}
		})
	}
}
