package pgbackup

import (
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// StoreSizeAnnotation, on an object-store backup's record, is the size of
// its tar stream before compression, as its Job reported it.
const StoreSizeAnnotation = "example.com/size"

// ParseBaseBackupResult reads the termination message of a base backup's
// container as annotations of its backup, nil when it is not a result.
func ParseBaseBackupResult(t *corev1.ContainerStateTerminated) map[string]string {
	if t.ExitCode != 0 {
		return nil
	}
	var result pgspec.BaseBackupResult
	if err := json.Unmarshal([]byte(t.Message), &result); err != nil || result.Timeline < 1 {
		return nil
	}
	start, startErr := postgres.ParseLSN(result.StartLSN)
	end, endErr := postgres.ParseLSN(result.EndLSN)
	if startErr != nil || endErr != nil || end < start {
		return nil
	}
	annotations := map[string]string{
		v1alpha1.BackupStartLSNAnnotation: start.String(),
		v1alpha1.BackupEndLSNAnnotation:   end.String(),
		v1alpha1.BackupTimelineAnnotation: strconv.FormatInt(result.Timeline, 10),
	}
	if result.Size > 0 {
		annotations[StoreSizeAnnotation] = resource.NewQuantity(result.Size, resource.BinarySI).String()
	}
	if point, err := time.Parse(time.RFC3339, result.PointInTime); err == nil {
		annotations[v1alpha1.BackupPointInTimeAnnotation] = point.UTC().Format(time.RFC3339)
	}
	return annotations
}
