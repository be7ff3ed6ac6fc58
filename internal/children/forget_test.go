package children

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// What the Manager remembers of a verified child goes when the child's
// informer reports it deleted (the garbage collector took it with its
// owner), not only when the memory is full.
func TestAVerifiedChildIsForgottenWhenDeleted(t *testing.T) {
	g := NewWithT(t)
	informers := &informertest.FakeInformers{Scheme: clientgoscheme.Scheme}
	c := fake.NewClientBuilder().Build()
	m := newManager(c, c, informers, clientgoscheme.Scheme, events.NewFakeRecorder(1), "Website")
	in, err := newIntent(desiredWebDeployment())
	g.Expect(err).NotTo(HaveOccurred())
	kept, deleted := storedWebDeployment(t, in), storedWebDeployment(t, in)
	deleted.UID = "uid-2"

	m.verify(context.Background(), kept, in)
	m.verify(context.Background(), deleted, in)
	g.Expect(m.verified.matches(kept, in)).To(BeTrue())
	g.Expect(m.verified.matches(deleted, in)).To(BeTrue())

	informer, err := informers.FakeInformerFor(context.Background(), &appsv1.Deployment{})
	g.Expect(err).NotTo(HaveOccurred())
	informer.Delete(deleted)
	g.Expect(m.verified.matches(deleted, in)).To(BeFalse(), "forgotten")
	g.Expect(m.verified.matches(kept, in)).To(BeTrue(), "the other kept")
}

// What the StatusWriter remembers of an owner goes when the owner's
// informer reports it deleted.
func TestStatusWriterForgetsDeletedOwners(t *testing.T) {
	g := NewWithT(t)
	informers := &informertest.FakeInformers{Scheme: clientgoscheme.Scheme}
	w := NewStatusWriter(fake.NewClientBuilder().Build())
	g.Expect(w.ForgetDeleted(context.Background(), informers, &corev1.ConfigMap{})).To(Succeed())
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: "uid-gone"}}
	staying := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "staying", Namespace: "ns", UID: "uid-staying"}}
	w.last[string(gone.UID)] = lastStatus{digest: "a"}
	w.last[string(staying.UID)] = lastStatus{digest: "b"}

	informer, err := informers.FakeInformerFor(context.Background(), &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	informer.Delete(gone)
	g.Expect(w.last).To(HaveLen(1))
	g.Expect(w.last).To(HaveKey(string(staying.UID)))
}
