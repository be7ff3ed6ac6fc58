package postgrescluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
)

func TestKeptFromEarlier(t *testing.T) {
	created := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: types.UID("uid-now"), CreationTimestamp: metav1.NewTime(created)}}
	claim := func(uid *string, at time.Time) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-1", CreationTimestamp: metav1.NewTime(at)}}
		if uid != nil {
			c.Annotations = map[string]string{v1alpha1.PostgresClusterUIDAnnotation: *uid}
		}
		return c
	}
	now, other := "uid-now", "uid-before"
	tests := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"made for this cluster", claim(&now, created.Add(time.Second)), false},
		{"adopted: this cluster's UID, older", claim(&now, created.Add(-time.Hour)), false},
		{"another cluster's UID, even newer", claim(&other, created.Add(time.Second)), true},
		{"no UID, made after the cluster (before claims carried one)", claim(nil, created.Add(time.Second)), false},
		{"no UID, made in the cluster's second", claim(nil, created), false},
		{"no UID, older than the cluster", claim(nil, created.Add(-time.Second)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keptFromEarlier(tt.claim, pg); got != tt.want {
				t.Errorf("keptFromEarlier = %t, want %t", got, tt.want)
			}
		})
	}
}
