package backupjob

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A result is read only from the pods the Job controls: a pod of
// someone's own, with the Job's name label and a result of their choosing,
// is not one of them.
func TestTerminatedContainersOfTheJobsOwnPods(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "shop", UID: "job-uid"}}
	pod := func(name, message string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{batchv1.JobNameLabel: job.Name}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "pg-basebackup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message}},
			}}},
		}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("forged", "forged result", nil),
		pod("forged-owner", "forged result", &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: "another-uid", Controller: ptr.To(true)}),
		pod("real", "the Job's result", &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}),
	).Build()
	r := &Reconciler{}
	r.APIReader = reader
	got, err := r.terminatedContainers(t.Context(), job, "pg-basebackup", corev1.PodSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Message != "the Job's result" {
		t.Errorf("terminatedContainers = %+v, want the Job's own pod's result alone", got)
	}
}
