package postgrescluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func TestArchivingCondition(t *testing.T) {
	at := func(s int) *metav1.Time { t := metav1.NewTime(time.Date(2026, 12, 7, 6, 0, s, 0, time.UTC)); return &t }
	archiving := &v1alpha1.PostgresCluster{Spec: v1alpha1.PostgresClusterSpec{Backup: &v1alpha1.PostgresBackupSpec{
		ObjectStore: v1alpha1.PostgresObjectStore{Endpoint: "http://store:8333", Bucket: "wal", CredentialsSecret: "keys"}}}}
	tests := []struct {
		name    string
		pg      *v1alpha1.PostgresCluster
		a       *v1alpha1.PostgresArchivingStatus
		primary string
		status  metav1.ConditionStatus
		reason  string
		says    string
	}{
		{"no spec.backup: no condition", &v1alpha1.PostgresCluster{}, nil, "db-1", "", "", ""},
		{"no primary", archiving, nil, "", metav1.ConditionFalse, v1alpha1.PostgresNoPrimaryReason, "No primary"},
		{"a primary that has not reported", archiving, nil, "db-1", metav1.ConditionFalse, v1alpha1.PostgresArchiveStartingReason, "not reported"},
		{"nothing archived yet", archiving, &v1alpha1.PostgresArchivingStatus{}, "db-1", metav1.ConditionFalse, v1alpha1.PostgresArchiveStartingReason, "no WAL file yet"},
		{"archiving", archiving, &v1alpha1.PostgresArchivingStatus{LastArchivedWAL: "000000010000000000000003", LastArchivedAt: at(10)},
			"db-1", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, "up to 000000010000000000000003"},
		{"a failure after the last success: failing, with the cause and what waits",
			archiving, &v1alpha1.PostgresArchivingStatus{LastArchivedWAL: "000000010000000000000003", LastArchivedAt: at(10),
				LastFailedWAL: "000000010000000000000004", LastFailedAt: at(20), LastFailure: "connection refused", PendingWAL: 3},
			"db-1", metav1.ConditionFalse, v1alpha1.PostgresArchiveFailingReason, "connection refused; 3 WAL files wait"},
		{"a success after the last failure: archiving again", archiving, &v1alpha1.PostgresArchivingStatus{LastArchivedWAL: "000000010000000000000005", LastArchivedAt: at(30),
			LastFailedWAL: "000000010000000000000004", LastFailedAt: at(20)}, "db-1", metav1.ConditionTrue, v1alpha1.PostgresArchivingReason, ""},
		{"failing from the start", archiving, &v1alpha1.PostgresArchivingStatus{LastFailedWAL: "000000010000000000000001", LastFailedAt: at(1), LastFailure: "403 Forbidden"},
			"db-1", metav1.ConditionFalse, v1alpha1.PostgresArchiveFailingReason, "403 Forbidden"},
	}
	for _, tc := range tests {
		c, ok := archivingCondition(tc.pg, tc.a, tc.primary)
		if tc.status == "" {
			if ok {
				t.Errorf("%s: got %+v, want none", tc.name, c)
			}
			continue
		}
		if !ok || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
			t.Errorf("%s: got %v %s %q; want %s %s saying %q", tc.name, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.says)
		}
	}
}
