package backupjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func TestGoneFromStore(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 12, 7, h, 0, 0, 0, time.UTC) }
	cluster := func(first *time.Time) *v1alpha1.PostgresCluster {
		pg := &v1alpha1.PostgresCluster{}
		if first != nil {
			pg.Status.Archiving = &v1alpha1.PostgresArchivingStatus{FirstRecoverabilityPoint: &metav1.Time{Time: *first}}
		}
		return pg
	}
	oldest := at(5)
	tests := []struct {
		name string
		b    backup
		pg   *v1alpha1.PostgresCluster
		want bool
	}{
		{"ended before the store's oldest backup: retention deleted it", backup{finished: at(3)}, cluster(&oldest), true},
		{"the store's oldest backup itself (its run ends after the copy)", backup{finished: at(5).Add(time.Second)}, cluster(&oldest), false},
		{"the store not read yet", backup{finished: at(3)}, cluster(nil), false},
		{"no cluster", backup{finished: at(3)}, nil, false},
		{"a run whose end is not known", backup{}, cluster(&oldest), false},
	}
	for _, tc := range tests {
		if got := goneFromStore(&tc.b, tc.pg); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
