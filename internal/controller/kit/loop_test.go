package kit

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFirstProgressWaitsUntilTheIntervalAfterCreation(t *testing.T) {
	created := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	inProgress := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RollingOut"},
		{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected"},
	}
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available"}}
	degraded := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ImagePullFailed"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "ImagePullFailed"},
	}
	for _, tc := range []struct {
		name          string
		since         time.Duration
		interval      time.Duration
		written, next []metav1.Condition
		want          time.Duration
	}{
		{name: "in progress right after creation waits the interval", since: 0, interval: 5 * time.Second, next: inProgress, want: 5 * time.Second},
		{name: "in progress later waits what is left", since: 2 * time.Second, interval: 5 * time.Second, next: inProgress, want: 3 * time.Second},
		{name: "in progress past the interval is written", since: 6 * time.Second, interval: 5 * time.Second, next: inProgress, want: 0},
		{name: "ready is written at once", since: time.Second, interval: 5 * time.Second, next: ready, want: 0},
		{name: "degraded is written at once", since: time.Second, interval: 5 * time.Second, next: degraded, want: 0},
		{name: "only the first status waits", since: time.Second, interval: 5 * time.Second, written: degraded, next: inProgress, want: 0},
		{name: "no interval, no wait", since: 0, interval: 0, next: inProgress, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := firstProgressHold(created, created.Add(tc.since), tc.interval, tc.written, tc.next, "Ready", "Degraded")
			if got != tc.want {
				t.Errorf("firstProgressHold = %s, want %s", got, tc.want)
			}
		})
	}
}
