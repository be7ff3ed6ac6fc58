package website

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/kit/kstatustest"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

var now = metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))

// deployment is a Deployment whose controller has observed generation 2.
func deployment(replicas, updated, ready, available int32, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Generation: 2},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2,
			Replicas:           replicas,
			UpdatedReplicas:    updated,
			ReadyReplicas:      ready,
			AvailableReplicas:  available,
			Conditions:         conditions,
		},
	}
}

func waitingPod(name, reason, message string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name:  "website",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}}},
	}
}

type wantCondition struct {
	status metav1.ConditionStatus
	reason string
}

func TestComputeStatus(t *testing.T) {
	tests := []struct {
		name        string
		replicas    int32
		obs         observation
		ready       wantCondition
		progressing wantCondition
		degraded    wantCondition
		readyText   string
		message     string // a part of the Ready condition's message
		// kstatus is what Flux, Argo CD and kubectl wait make of it.
		kstatus status.Status
	}{
		{
			name:        "rolled out and routed",
			replicas:    3,
			obs:         observation{deployment: deployment(3, 3, 3, 3), deploymentCurrent: true, servicePresent: true, routedPods: 3},
			ready:       wantCondition{metav1.ConditionTrue, websitev1.AvailableReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutCompleteReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.CurrentStatus,
			readyText:   "3/3",
		},
		{
			name:        "just created: the Deployment controller has not acted yet",
			replicas:    1,
			obs:         observation{deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.RollingOutReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "0/1",
		},
		{
			name:        "pods of the new spec are starting",
			replicas:    3,
			obs:         observation{deployment: deployment(3, 1, 3, 3), deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.RollingOutReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "3/3",
			message:     "1 of 3 replicas run the current spec",
		},
		{
			name:        "old pods still terminating",
			replicas:    2,
			obs:         observation{deployment: deployment(3, 2, 2, 2), deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.RollingOutReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "2/2",
			message:     "1 old replicas are being replaced",
		},
		{
			name:        "Deployment not yet applied from the current spec",
			replicas:    1,
			obs:         observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: false},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.RollingOutReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "1/1",
		},
		{
			name:        "scaled to zero",
			replicas:    0,
			obs:         observation{deployment: deployment(0, 0, 0, 0), deploymentCurrent: true, servicePresent: true},
			ready:       wantCondition{metav1.ConditionTrue, websitev1.ScaledToZeroReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutCompleteReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.CurrentStatus,
			readyText:   "0/0",
		},
		{
			name:        "rolled out, but the Service selects no pod",
			replicas:    3,
			obs:         observation{deployment: deployment(3, 3, 3, 3), deploymentCurrent: true, servicePresent: true, routedPods: 0},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.EndpointsNotReadyReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutCompleteReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "3/3",
			message:     "Service site routes to 0 of 3 available pods",
		},
		{
			name:        "rolled out, but the Service is missing",
			replicas:    1,
			obs:         observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.EndpointsNotReadyReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutCompleteReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "1/1",
			message:     "Waiting for Service site to be created",
		},
		{
			name:     "image cannot be pulled",
			replicas: 1,
			obs: observation{
				deployment: deployment(1, 1, 0, 0), deploymentCurrent: true,
				pods: []corev1.Pod{waitingPod("site-abc", "ImagePullBackOff", `Back-off pulling image "nginx:nope"`)},
			},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.ImagePullFailedReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.ImagePullFailedReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
			message:     `Pod site-abc: ImagePullBackOff: Back-off pulling image "nginx:nope"`,
		},
		{
			name:     "container crash-looping",
			replicas: 1,
			obs: observation{
				deployment: deployment(1, 1, 0, 0), deploymentCurrent: true,
				pods: []corev1.Pod{waitingPod("site-abc", "CrashLoopBackOff", "back-off 5m0s restarting failed container")},
			},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.CrashLoopingReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.CrashLoopingReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
		},
		{
			name:     "a ConfigMap named in env is missing",
			replicas: 1,
			obs: observation{
				deployment: deployment(1, 1, 0, 0), deploymentCurrent: true,
				pods: []corev1.Pod{waitingPod("site-abc", "CreateContainerConfigError", `configmap "settings" not found`)},
			},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.ContainerConfigErrorReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.ContainerConfigErrorReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
			message:     `configmap "settings" not found`,
		},
		{
			name:     "a container that is merely being created is no problem",
			replicas: 1,
			obs: observation{
				deployment: deployment(1, 1, 0, 0), deploymentCurrent: true,
				pods: []corev1.Pod{waitingPod("site-abc", "ContainerCreating", "")},
			},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.RollingOutReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionFalse, websitev1.AsExpectedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "0/1",
		},
		{
			name:     "pods rejected by admission",
			replicas: 1,
			obs: observation{deployment: deployment(0, 0, 0, 0, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: `pods "site-abc" is forbidden: exceeded quota: pods`,
			}), deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.PodsRejectedReason},
			progressing: wantCondition{metav1.ConditionTrue, websitev1.RollingOutReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.PodsRejectedReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
			message:     "exceeded quota",
		},
		{
			name:     "progress deadline exceeded",
			replicas: 1,
			obs: observation{deployment: deployment(1, 1, 0, 0, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "site-abc" has timed out progressing.`,
			}), deploymentCurrent: true},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.ProgressDeadlineExceededReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.ProgressDeadlineExceededReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.ProgressDeadlineExceededReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
		},
		{
			name:     "a Deployment of the same name belongs to someone else",
			replicas: 1,
			obs: observation{blocker: &cause{websitev1.DeploymentConflictReason,
				"Deployment site already exists and is not owned by this Website"}},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.DeploymentConflictReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutBlockedReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.DeploymentConflictReason},
			kstatus:     status.FailedStatus,
			readyText:   "0/1",
			message:     "not owned by this Website",
		},
		{
			name:     "a conflict blocks even a healthy Deployment",
			replicas: 1,
			obs: observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true,
				blocker: &cause{websitev1.ServiceConflictReason, "Service site already exists"}},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.ServiceConflictReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutBlockedReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.ServiceConflictReason},
			kstatus:     status.FailedStatus,
			readyText:   "1/1",
		},
		{
			name:     "a write that failed is retried: in progress, not stalled",
			replicas: 1,
			obs: observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true, retry: true,
				blocker: &cause{websitev1.ApplyFailedReason, "create Service site: the admission webhook is down"}},
			ready:       wantCondition{metav1.ConditionFalse, websitev1.ApplyFailedReason},
			progressing: wantCondition{metav1.ConditionFalse, websitev1.RolloutBlockedReason},
			degraded:    wantCondition{metav1.ConditionTrue, websitev1.ApplyFailedReason},
			kstatus:     status.InProgressStatus,
			readyText:   "1/1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := websitetest.Website("site", "default", websitetest.WithReplicas(tt.replicas), websitetest.WithGeneration(2))

			status := computeStatus(w, tt.obs, "cluster.local", now)

			g.Expect(status.ObservedGeneration).To(Equal(int64(2)))
			g.Expect(status.Ready).To(Equal(tt.readyText))
			g.Expect(status.URL).To(Equal("http://site.default.svc.cluster.local"))
			g.Expect(status.Selector).To(Equal("app.kubernetes.io/instance=site,app.kubernetes.io/name=website"))
			g.Expect(status.Conditions).To(HaveLen(5))
			for _, want := range []struct {
				conditionType string
				want          wantCondition
			}{
				{websitev1.ReadyCondition, tt.ready},
				{websitev1.ProgressingCondition, tt.progressing},
				{websitev1.DegradedCondition, tt.degraded},
			} {
				c := meta.FindStatusCondition(status.Conditions, want.conditionType)
				g.Expect(c).NotTo(BeNil(), want.conditionType)
				g.Expect(c.Status).To(Equal(want.want.status), want.conditionType)
				g.Expect(c.Reason).To(Equal(want.want.reason), want.conditionType)
				g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
				g.Expect(c.Message).NotTo(BeEmpty(), want.conditionType)
			}
			g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.ReadyCondition).Message).To(ContainSubstring(tt.message))
			w.Status = status
			got, message := kstatustest.Of(t, w)
			g.Expect(got).To(Equal(tt.kstatus), message)
		})
	}
}

func TestStatusURLIsTheIngressURLWhenThereIsAHost(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("site", "default", websitetest.WithIngress("www.example.com", "/", "", "www-tls"))
	status := computeStatus(w, observation{ingressPresent: true}, "cluster.local", now)
	g.Expect(status.URL).To(Equal("https://www.example.com"))
}

func TestReadyWaitsForTheIngressItAsksFor(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("site", "default", websitetest.WithIngress("www.example.com", "/", "", ""))
	obs := observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true, servicePresent: true, routedPods: 1}
	status := computeStatus(w, obs, "cluster.local", now)
	g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.ReadyCondition).Reason).To(Equal(websitev1.EndpointsNotReadyReason))
	g.Expect(status.URL).To(Equal("http://site.default.svc.cluster.local"), "no Ingress, no Ingress URL")

	obs.ingressPresent = true
	status = computeStatus(w, obs, "cluster.local", now)
	g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(status.URL).To(Equal("http://www.example.com"))
}

func TestReadyEndpointPodsCountsEachReadyPodOnce(t *testing.T) {
	ready, notReady := true, false
	endpoint := func(pod string, isReady *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0." + pod},
			Conditions: discoveryv1.EndpointConditions{Ready: isReady},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: pod},
		}
	}
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   int32
	}{
		{"no slice", nil, 0},
		{"an empty slice: the selector matches no pod", []discoveryv1.EndpointSlice{{}}, 0},
		{"ready, unset (documented as ready) and not ready", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			endpoint("1", &ready), endpoint("2", nil), endpoint("3", &notReady)}}}, 2},
		{"a pod in two slices while it moves", []discoveryv1.EndpointSlice{
			{Endpoints: []discoveryv1.Endpoint{endpoint("1", &ready)}},
			{Endpoints: []discoveryv1.Endpoint{endpoint("1", &ready), endpoint("2", &ready)}}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(readyEndpointPods(tt.slices)).To(Equal(tt.want))
		})
	}
}

func TestConditionsKeepTheirTransitionTimeWhileTheirStatusHolds(t *testing.T) {
	g := NewWithT(t)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	w := websitetest.Website("site", "default", websitetest.WithConditions(
		metav1.Condition{Type: websitev1.ReadyCondition, Status: metav1.ConditionTrue, Reason: websitev1.AvailableReason, LastTransitionTime: earlier},
		metav1.Condition{Type: websitev1.DegradedCondition, Status: metav1.ConditionTrue, Reason: websitev1.CrashLoopingReason, LastTransitionTime: earlier},
	))

	status := computeStatus(w, observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true, servicePresent: true, routedPods: 1}, "cluster.local", now)

	g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.ReadyCondition).LastTransitionTime).To(Equal(earlier))
	g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.DegradedCondition).LastTransitionTime).To(Equal(now),
		"Degraded turned False now")
	g.Expect(meta.FindStatusCondition(status.Conditions, websitev1.ProgressingCondition).LastTransitionTime).To(Equal(now))
}

// The same observation gives the same status: a reconcile with nothing new
// writes nothing.
func TestComputeStatusIsStable(t *testing.T) {
	g := NewWithT(t)
	w := websitetest.Website("site", "default")
	obs := observation{deployment: deployment(1, 1, 1, 1), deploymentCurrent: true}
	first := computeStatus(w, obs, "cluster.local", now)
	w.Status = first
	second := computeStatus(w, obs, "cluster.local", metav1.NewTime(now.Add(time.Minute)))
	g.Expect(second).To(Equal(first))
}

// What makes a status urgent (written at once rather than within
// statusProgressInterval): the generation it describes, readiness and a
// problem. Counts and messages of a rollout under way are not.
func TestStatusSummaryChangesWithGenerationReadinessAndProblemsOnly(t *testing.T) {
	rollingOut := websitev1.WebsiteStatus{ObservedGeneration: 1, Replicas: 1, Conditions: []metav1.Condition{
		{Type: websitev1.ReadyCondition, Status: metav1.ConditionFalse, Reason: websitev1.RollingOutReason, Message: "0 of 1 replicas available"},
		{Type: websitev1.DegradedCondition, Status: metav1.ConditionFalse, Reason: websitev1.AsExpectedReason},
	}}
	change := func(mutate func(*websitev1.WebsiteStatus)) websitev1.WebsiteStatus {
		s := *rollingOut.DeepCopy()
		mutate(&s)
		return s
	}
	for _, tc := range []struct {
		name   string
		status websitev1.WebsiteStatus
		urgent bool
	}{
		{"a message", change(func(s *websitev1.WebsiteStatus) { s.Conditions[0].Message = "1 pod starting" }), false},
		{"a count", change(func(s *websitev1.WebsiteStatus) { s.ReadyReplicas = 1 }), false},
		{"readiness", change(func(s *websitev1.WebsiteStatus) { s.Conditions[0].Status = metav1.ConditionTrue }), true},
		{"a problem", change(func(s *websitev1.WebsiteStatus) {
			s.Conditions[1].Status, s.Conditions[1].Reason = metav1.ConditionTrue, websitev1.ImagePullFailedReason
		}), true},
		{"the generation", change(func(s *websitev1.WebsiteStatus) { s.ObservedGeneration = 2 }), true},
	} {
		if urgent := statusSummary(&tc.status) != statusSummary(&rollingOut); urgent != tc.urgent {
			t.Errorf("a change of %s: urgent %v, want %v", tc.name, urgent, tc.urgent)
		}
	}
}
