package children

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/platform"
)

const (
	holderLabel = "example.com/holder"
	adoptLabel  = "example.com/adopt"
)

// ensureHeldNamespace ensures, for the owner named owner, the namespace
// shared, which the owner holds when it carries holderLabel=owner (owners
// of data carry no owner reference) and may adopt when it carries
// adoptLabel=owner.
func (f *lagFixture) ensureHeldNamespace(owner string) Result {
	labels := ManagedLabels()
	labels[holderLabel] = owner
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner, UID: types.UID("uid-" + owner)}}
	held := func(obj client.Object) bool { return obj.GetLabels()[holderLabel] == owner }
	adopt := func(obj client.Object) bool { return obj.GetLabels()[adoptLabel] == owner }
	return f.manager.Ensure(context.Background(), o, corev1ac.Namespace("shared").WithLabels(labels), &corev1.Namespace{},
		OwnedBy(held), AdoptIf(adopt))
}

func (f *lagFixture) sharedNamespace() *corev1.Namespace {
	ns := &corev1.Namespace{}
	f.g.Expect(f.api.Get(context.Background(), client.ObjectKey{Name: "shared"}, ns)).To(Succeed())
	return ns
}

// Two owners that want the same object and reconcile at once: the second
// finds the first one's create remembered but not yet cached. It is the
// first's, and stays so.
func TestAnotherOwnersChildNotYetCachedIsAConflict(t *testing.T) {
	f := newLagFixture(t)
	f.lagging = true
	f.g.Expect(f.ensureHeldNamespace("a").Action).To(Equal(Created))

	second := f.ensureHeldNamespace("b")
	f.g.Expect(second.Action).To(Equal(Conflict))
	f.g.Expect(f.sharedNamespace().Labels).To(HaveKeyWithValue(holderLabel, "a"))
}

// An object that the cache holds (it carries the operator's managed-by
// label) but that the owner does not, labelled for adoption by another
// owner, stays a conflict: the adoption the cache path now allows is the
// labelled owner's only. (An object labelled for the owner is adopted:
// the Tenant's envtest TestAManagedNamespaceLabelledForAdoptionIsAdopted,
// as adoption needs the API server's managed fields.)
func TestACachedObjectLabelledForAnotherOwnerIsAConflict(t *testing.T) {
	f := newLagFixture(t)
	f.g.Expect(f.api.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared", Labels: map[string]string{
		platform.ManagedByLabel: platform.Name, adoptLabel: "b",
	}}})).To(Succeed())

	f.g.Expect(f.ensureHeldNamespace("a").Action).To(Equal(Conflict))
	f.g.Expect(f.sharedNamespace().Labels).NotTo(HaveKey(holderLabel))
}
