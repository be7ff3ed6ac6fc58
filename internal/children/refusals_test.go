package children

import (
	"testing"
	"time"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestARefusedDesiredStateIsAnsweredFromMemoryUntilItChangesOrAges(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r := newRefusals(clk)
	refusedReplicas := mustIntent(t, appsv1ac.Deployment("site", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(-1)))
	fixed := mustIntent(t, appsv1ac.Deployment("site", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1)))
	other := mustIntent(t, appsv1ac.Deployment("other", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(-1)))

	r.remember(refusedReplicas, Result{Action: Invalid, Message: "replicas"})
	if got, ok := r.lookup(refusedReplicas); !ok || got.Message != "replicas" {
		t.Fatalf("the same desired state again: got %v, %v; want the remembered refusal", got, ok)
	}
	if _, ok := r.lookup(fixed); ok {
		t.Error("a changed desired state must be sent to the API server")
	}
	if _, ok := r.lookup(other); ok {
		t.Error("another child's refusal must not answer for this one")
	}

	clk.SetTime(clk.Now().Add(refusalMemory))
	if _, ok := r.lookup(refusedReplicas); ok {
		t.Error("an old refusal must be tried again: the cluster's validation may have changed")
	}

	r.remember(refusedReplicas, Result{Action: Invalid})
	r.forget(refusedReplicas)
	if _, ok := r.lookup(refusedReplicas); ok {
		t.Error("a successful write forgets the refusal")
	}
}

func mustIntent(t *testing.T, desired *appsv1ac.DeploymentApplyConfiguration) *intent {
	t.Helper()
	in, err := newIntent(desired)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
