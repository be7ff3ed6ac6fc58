package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func TestBackupList(t *testing.T) {
	size := resource.MustParse("256Mi")
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "db-nightly", Namespace: "shop"},
		Spec:       v1alpha1.BackupJobSpec{Source: v1alpha1.BackupSource{PostgresCluster: "db"}},
		Status: v1alpha1.BackupJobStatus{
			LastSuccessfulTime: at(-time.Hour), NextScheduleTime: at(30 * time.Minute),
			Backups: []v1alpha1.Backup{
				{Name: "db-nightly-3", Kind: v1alpha1.VolumeBackup, ScheduledTime: *at(-10 * time.Second), Result: v1alpha1.BackupRunning},
				{Name: "db-nightly-2", Kind: v1alpha1.VolumeBackup, ScheduledTime: *at(-time.Hour), Result: v1alpha1.BackupSucceeded,
					Size: &size, Verified: v1alpha1.VerificationPassed, KeptBy: []v1alpha1.RetentionRule{"NewestSuccessful", "Last"}},
				{Name: "db-nightly-1", Kind: v1alpha1.VolumeBackup, ScheduledTime: *at(-48 * time.Hour), Result: v1alpha1.BackupSucceeded,
					Size: &size, KeptBy: []v1alpha1.RetentionRule{"Pinned"}},
			},
		},
	}
	tests := []struct {
		name   string
		pinned map[string]bool
		want   []string
	}{
		{
			name:   "pins read from the backups",
			pinned: map[string]bool{"db-nightly-3": false, "db-nightly-2": true, "db-nightly-1": false},
			want: []string{
				"BackupJob shop/db-nightly: PostgresCluster db into new volumes\nLast success 60m ago, next run in 30m",
				"BACKUP        RESULT     AGE  SIZE   PINNED  VERIFIED  KEPT BY",
				"db-nightly-3  Running    10s  -      false   -         -",
				"db-nightly-2  Succeeded  60m  256Mi  true    Passed    NewestSuccessful,Last",
				"db-nightly-1  Succeeded  2d   256Mi  false   -         Pinned",
			},
		},
		{
			// A backup whose label could not be read: status's keptBy
			// says whether it is pinned.
			name: "pins from status",
			want: []string{
				"db-nightly-2  Succeeded  60m  256Mi  false   Passed    NewestSuccessful,Last",
				"db-nightly-1  Succeeded  2d   256Mi  true    -         Pinned",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			BackupList(&out, bj, tt.pinned, now)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("missing %q in:\n%s", w, out.String())
				}
			}
			fits(t, out.String())
		})
	}
}

func TestBackupListEmptyAndNotReady(t *testing.T) {
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
		Spec:       v1alpha1.BackupJobSpec{Source: v1alpha1.BackupSource{PersistentVolumeClaimName: "data"}, Suspend: new(true)},
		Status: v1alpha1.BackupJobStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "False",
			Reason: "SourceNotFound", Message: "PersistentVolumeClaim data not found"}}},
	}
	var out bytes.Buffer
	BackupList(&out, bj, nil, now)
	want := "BackupJob shop/data: claim data into new volumes\n" +
		"Last success never, next run none (suspended)\n" +
		"  Not ready (SourceNotFound): PersistentVolumeClaim data not found\n" +
		"No backups.\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
