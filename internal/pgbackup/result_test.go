package pgbackup

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func TestParseBaseBackupResult(t *testing.T) {
	terminated := func(code int32, message string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Message: message}
	}
	good := `{"startLSN":"16/B374D848","endLSN":"16/B4000100","timeline":3,"fromStandby":true}`
	tests := map[string]struct {
		state *corev1.ContainerStateTerminated
		want  map[string]string
	}{
		"the result": {terminated(0, good),
			map[string]string{v1alpha1.BackupStartLSNAnnotation: "16/B374D848", v1alpha1.BackupEndLSNAnnotation: "16/B4000100", v1alpha1.BackupTimelineAnnotation: "3"}},
		"an object-store backup's, with its size": {terminated(0, `{"startLSN":"0/4000028","endLSN":"0/4000100","timeline":1,"fromStandby":false,"backupID":"nightly-1","size":31457280}`),
			map[string]string{v1alpha1.BackupStartLSNAnnotation: "0/4000028", v1alpha1.BackupEndLSNAnnotation: "0/4000100", v1alpha1.BackupTimelineAnnotation: "1",
				StoreSizeAnnotation: "30Mi"}},
		"an object-store backup's, with the point in time its run marked": {
			terminated(0, `{"startLSN":"0/4000028","endLSN":"0/4000100","timeline":1,"fromStandby":false,"backupID":"nightly-1","pointInTime":"2026-12-08T01:02:04Z"}`),
			map[string]string{v1alpha1.BackupStartLSNAnnotation: "0/4000028", v1alpha1.BackupEndLSNAnnotation: "0/4000100", v1alpha1.BackupTimelineAnnotation: "1",
				v1alpha1.BackupPointInTimeAnnotation: "2026-12-08T01:02:04Z"}},
		"a point in time that is not a time is left out": {
			terminated(0, `{"startLSN":"0/4000028","endLSN":"0/4000100","timeline":1,"pointInTime":"soon"}`),
			map[string]string{v1alpha1.BackupStartLSNAnnotation: "0/4000028", v1alpha1.BackupEndLSNAnnotation: "0/4000100", v1alpha1.BackupTimelineAnnotation: "1"}},
		"a failed container's":    {terminated(1, good), nil},
		"the end of a log":        {terminated(0, "pg_basebackup: error: connection refused"), nil},
		"not a position":          {terminated(0, `{"startLSN":"nowhere","endLSN":"0/2","timeline":3}`), nil},
		"no end":                  {terminated(0, `{"startLSN":"0/1","timeline":3}`), nil},
		"an end before the start": {terminated(0, `{"startLSN":"0/2","endLSN":"0/1","timeline":3}`), nil},
		"no timeline":             {terminated(0, `{"startLSN":"0/1","endLSN":"0/2"}`), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ParseBaseBackupResult(tc.state)).To(Equal(tc.want))
		})
	}
}
