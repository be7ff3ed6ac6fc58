package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	websitev1 "example.com/platform-operator/api/v1"
)

// The scripted client's two statuses must read as the burst's watcher
// reads the operator's: not Ready, then Ready; else its phase never ends.
func TestScriptedStatusesReadAsTheOperatorsDo(t *testing.T) {
	g := NewWithT(t)
	w := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "site-00001", Namespace: benchNamespace, Generation: 1, UID: types.UID("u1")}}
	for _, ready := range []bool{false, true} {
		with := w.DeepCopy()
		with.Status = scriptedStatus(w, ready, time.Unix(0, 0))
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(with)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(websiteReady(&unstructured.Unstructured{Object: u})).To(Equal(ready), "ready=%v", ready)
	}
}

// The scripted client's children are the operator's, owned by the Website
// as the operator's are, so that the garbage collector tracks them alike.
func TestScriptedChildrenAreOwnedByTheirWebsite(t *testing.T) {
	g := NewWithT(t)
	w := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "site-00001", Namespace: benchNamespace, Generation: 1, UID: types.UID("u1")}}
	d, s, err := websiteChildren(w)
	g.Expect(err).NotTo(HaveOccurred())
	for _, refs := range [][]metav1.OwnerReference{d.OwnerReferences, s.OwnerReferences} {
		g.Expect(refs).To(HaveLen(1))
		g.Expect(refs[0].UID).To(Equal(w.UID))
		g.Expect(refs[0].Controller).To(HaveValue(BeTrue()))
	}
	g.Expect(d.Name).To(Equal(w.Name))
	g.Expect(s.Name).To(Equal(w.Name))
}
