package backupjob

import (
	"strconv"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/platform"
)

// An error in a VolumeSnapshot's status is one the snapshot controller
// retries and clears on success: the run is still running until the
// snapshot's deadline, so retention keeps it and a Forbid policy waits.
func TestSnapshotBackupFailsOnlyAtItsDeadline(t *testing.T) {
	created := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	snapshot := func(ready *bool, errorMessage string) *snapshotv1.VolumeSnapshot {
		s := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "db-1", CreationTimestamp: metav1.NewTime(created)},
			Status: &snapshotv1.VolumeSnapshotStatus{ReadyToUse: ready}}
		if errorMessage != "" {
			s.Status.Error = &snapshotv1.VolumeSnapshotError{Message: ptr.To(errorMessage)}
		}
		return s
	}
	tests := []struct {
		name     string
		snapshot *snapshotv1.VolumeSnapshot
		now      time.Time
		result   v1alpha1.BackupResult
		message  []string
	}{
		{name: "ready", snapshot: snapshot(ptr.To(true), ""), now: created.Add(time.Minute), result: v1alpha1.BackupSucceeded},
		{name: "not ready yet", snapshot: snapshot(ptr.To(false), ""), now: created.Add(time.Minute), result: v1alpha1.BackupRunning},
		{name: "no status yet", snapshot: &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "db-1", CreationTimestamp: metav1.NewTime(created)}},
			now: created.Add(time.Minute), result: v1alpha1.BackupRunning},
		{name: "an error, retried", snapshot: snapshot(ptr.To(false), "CreateSnapshot timed out"), now: created.Add(time.Hour),
			result: v1alpha1.BackupRunning, message: []string{"CreateSnapshot timed out", "retries until 2026-12-01T08:00:00Z"}},
		{name: "an error, at the deadline", snapshot: snapshot(ptr.To(false), "CreateSnapshot timed out"), now: created.Add(snapshotDeadline),
			result: v1alpha1.BackupFailed, message: []string{"not ready 6h0m0s after its creation", "last reported the error \"CreateSnapshot timed out\""}},
		{name: "never ready, no error, past the deadline", snapshot: snapshot(nil, ""), now: created.Add(7 * time.Hour),
			result: v1alpha1.BackupFailed, message: []string{"not ready 6h0m0s after its creation"}},
		{name: "ready after an error and past the deadline", snapshot: snapshot(ptr.To(true), ""), now: created.Add(7 * time.Hour), result: v1alpha1.BackupSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := snapshotBackup(tt.snapshot, tt.now)
			g.Expect(b.result).To(Equal(tt.result))
			for _, part := range tt.message {
				g.Expect(b.message).To(ContainSubstring(part))
			}
			if tt.result == v1alpha1.BackupFailed {
				g.Expect(b.reason).To(Equal(v1alpha1.BackupJobSnapshotFailedReason))
				g.Expect(b.finished).To(Equal(created.Add(snapshotDeadline)))
			}
			obs := &observation{backups: []*backup{b}}
			g.Expect(obs.running()).To(HaveLen(map[bool]int{true: 1, false: 0}[tt.result == v1alpha1.BackupRunning]), "running as a Forbid policy sees it")
		})
	}
}

// A backup labelled for a BackupJob's name is its own when that
// BackupJob's run made it: by the UID it records, or, for one made before
// the UID was recorded, by being made no earlier than the BackupJob with
// the run label written by the operator.
func TestMadeBy(t *testing.T) {
	created := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "bj-2", CreationTimestamp: metav1.NewTime(created)}}
	byOperator := metav1.ManagedFieldsEntry{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:` + RunLabel + `":{}}}}`)}}
	byHand := metav1.ManagedFieldsEntry{Manager: "kubectl-label", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:` + RunLabel + `":{}}}}`)}}
	claim := func(madeBy string, at time.Time, managers ...metav1.ManagedFieldsEntry) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-1", CreationTimestamp: metav1.NewTime(at), ManagedFields: managers}}
		if madeBy != "" {
			c.Annotations = map[string]string{MadeByAnnotation: madeBy}
		}
		return c
	}
	tests := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"made by this BackupJob", claim("bj-2", created.Add(time.Hour)), true},
		{"made by an earlier BackupJob of the name", claim("bj-1", created.Add(-time.Hour)), false},
		{"handed over: made earlier, annotated with this BackupJob's UID", claim("bj-2", created.Add(-time.Hour)), true},
		{"no record, made by the operator after this BackupJob", claim("", created.Add(time.Hour), byOperator), true},
		{"no record, made by the operator in the second this BackupJob was", claim("", created, byOperator), true},
		{"no record, made by the operator before this BackupJob", claim("", created.Add(-time.Second), byOperator), false},
		{"no record, labelled by hand after this BackupJob", claim("", created.Add(time.Hour), byHand), false},
		{"no record, no managed fields", claim("", created.Add(time.Hour)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(madeBy(bj, tt.claim)).To(Equal(tt.want))
		})
	}
}

// A backup is named by its run. A claim made from a copy of a backup's
// manifest keeps its labels, not its name: it is no backup; nor is a claim
// of any other name labelled by hand as a backup, which retention would
// otherwise delete for someone who may only patch it.
func TestIsBackup(t *testing.T) {
	labelled := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RunLabel: name}}}
	}
	scheduled := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	long := "a-backupjob-with-a-name-of-fifty-two-characters-abcd"
	tests := []struct {
		name string
		obj  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"a run's backup", labelled(RunName("db", scheduled)), true},
		{"a copy of a backup under another name", func() *corev1.PersistentVolumeClaim {
			c := labelled(RunName("db", scheduled))
			c.Name = "db-restored"
			return c
		}(), false},
		{"no run label", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: RunName("db", scheduled)}}, false},
		{"a user's claim labelled as a run of its own name", labelled("data"), false},
		{"another BackupJob's run name", labelled(RunName("db-other", scheduled)), false},
		{"a run name with a leading zero", labelled("db-0" + strconv.FormatInt(scheduled.Unix(), 10)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(isBackup("db", tt.obj)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(isBackup(long, labelled(RunName(long, scheduled)))).To(BeTrue(), "a run's backup of a long name")
}
