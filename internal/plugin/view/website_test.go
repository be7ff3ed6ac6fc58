package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

func TestWebsiteVerdict(t *testing.T) {
	cond := func(typ, status, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: message, ObservedGeneration: 1}
	}
	tests := []struct {
		name       string
		generation int64
		conditions []metav1.Condition
		want       string
	}{
		{"no status", 1, nil, "Not Ready: the operator has not reported on it yet"},
		{"ready", 1, []metav1.Condition{cond("Ready", "True", "Available", "")}, "Ready (Available): serving at http://s.ns.svc"},
		{"degraded names the cause", 1, []metav1.Condition{
			cond("Ready", "False", "ImagePullFailed", "Pod s-1: ErrImagePull"),
			cond("Degraded", "True", "ImagePullFailed", "Pod s-1: ErrImagePull: not found")},
			"Not Ready because ImagePullFailed: Pod s-1: ErrImagePull: not found"},
		{"rolling out", 1, []metav1.Condition{
			cond("Ready", "False", "RollingOut", "1 of 3 replicas available"),
			cond("Degraded", "False", "AsExpected", "")},
			"Not Ready (RollingOut): 1 of 3 replicas available"},
		{"spec changed since", 2, []metav1.Condition{cond("Ready", "True", "Available", "")},
			"Not known: the status is of generation 1, the spec is at 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: tt.generation},
				Status: websitev1.WebsiteStatus{Conditions: tt.conditions, URL: "http://s.ns.svc"}}
			if got := WebsiteVerdict(ws); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

func TestWebsiteStatus(t *testing.T) {
	ws := &websitev1.Website{
		ObjectMeta: metav1.ObjectMeta{Name: "my-site", Generation: 1, CreationTimestamp: *at(-5 * time.Minute)},
		Spec:       websitev1.WebsiteSpec{Image: "nginx:1.25"},
		Status: websitev1.WebsiteStatus{Ready: "0/1", URL: "http://my-site.default.svc.cluster.local",
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: "False", Reason: "CrashLooping", ObservedGeneration: 1, Message: "Pod my-site-x: container website keeps exiting"},
				{Type: "Degraded", Status: "True", Reason: "CrashLooping", ObservedGeneration: 1, Message: "Pod my-site-x: container website keeps exiting"},
			}},
	}
	var out bytes.Buffer
	WebsiteStatus(&out, ws, now)
	for _, w := range []string{
		"NAME      IMAGE        READY   STATUS         URL                                        AGE",
		"my-site   nginx:1.25   0/1     CrashLooping   http://my-site.default.svc.cluster.local   5m",
		"Not Ready because CrashLooping: Pod my-site-x: container website keeps exiting",
		"  Degraded          True    CrashLooping",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("missing %q in:\n%s", w, out.String())
		}
	}
}
