package children

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A child whose desired state the owner's Judge refuses is neither created
// nor updated: the Result is Invalid with the judge's reason, and an
// existing child stays as it was. The judge sees the desired state as a
// typed object, and is not asked when nothing is to be written.
func TestAJudgedChildIsWrittenOnlyWhenTheJudgePassesIt(t *testing.T) {
	f := newLagFixture(t)
	var judged []int32
	judge := Judge(func(desired client.Object) error {
		port := desired.(*corev1.Service).Spec.Ports[0].Port
		judged = append(judged, port)
		if port < 1024 {
			return errors.New("spec.ports[0].port: Forbidden: below 1024")
		}
		return nil
	})
	ensure := func(port int32) (Result, *corev1.Service) {
		desired := corev1ac.Service("site", "ns").
			WithLabels(ManagedLabels()).
			WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("ConfigMap").
				WithName(f.owner.Name).WithUID(f.owner.UID).WithController(true).WithBlockOwnerDeletion(true)).
			WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithPort(port)))
		live := &corev1.Service{}
		return f.manager.Ensure(context.Background(), f.owner, desired, live, judge), live
	}

	refused, live := ensure(80)
	f.g.Expect(refused.Action).To(Equal(Invalid))
	f.g.Expect(refused.Exists).To(BeFalse())
	f.g.Expect(refused.Message).To(Equal("The operator refused the Service built from the spec: spec.ports[0].port: Forbidden: below 1024"))
	f.g.Expect(live.Name).To(BeEmpty(), "live holds no child")
	f.g.Expect(f.creates).To(BeZero())

	created, _ := ensure(8080)
	f.g.Expect(created.Action).To(Equal(Created))
	unchanged, _ := ensure(8080)
	f.g.Expect(unchanged.Action).To(Equal(Unchanged))
	f.g.Expect(judged).To(Equal([]int32{80, 8080}), "not judged when nothing is written")

	refused, live = ensure(443)
	f.g.Expect(refused.Action).To(Equal(Invalid))
	f.g.Expect(refused.Exists).To(BeTrue())
	f.g.Expect(live.Spec.Ports[0].Port).To(Equal(int32(8080)))
	stored := &corev1.Service{}
	f.g.Expect(f.api.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "site"}, stored)).To(Succeed())
	f.g.Expect(stored.Spec.Ports[0].Port).To(Equal(int32(8080)), "the child stays as it was")
}
