// Package kstatustest reads an object's status the way Flux, Argo CD and
// kubectl wait do, with the kstatus library of sigs.k8s.io/cli-utils, for
// the tests of every kind's status.
package kstatustest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Of is what kstatus makes of obj: Current, InProgress, Failed,
// Terminating, and its message.
func Of(t testing.TB, obj runtime.Object) (status.Status, string) {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("convert %T to unstructured: %v", obj, err)
	}
	result, err := status.Compute(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatalf("kstatus of %T: %v", obj, err)
	}
	return result.Status, result.Message
}
