package children

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Children created into a Creations get no event each: one event names them
// all, and none is emitted when nothing was created.
func TestCreationsAreToldInOneEvent(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(10)
	c := fake.NewClientBuilder().Build()
	m := newManager(c, c, &informertest.FakeInformers{Scheme: clientgoscheme.Scheme}, clientgoscheme.Scheme, recorder, "Tenant")
	owner := &corev1.ConfigMap{}
	owner.Name, owner.Namespace = "owner", "team"

	var created Creations
	for _, name := range []string{"first", "second"} {
		desired := corev1ac.ConfigMap(name, "team").WithLabels(map[string]string{"app.kubernetes.io/managed-by": "platform-operator"})
		res := m.Ensure(context.Background(), owner, desired, &corev1.ConfigMap{}, OwnedBy(func(_ client.Object) bool { return true }), CreatedInto(&created))
		g.Expect(res.Action).To(Equal(Created), "%s: %v", name, res.Err)
	}
	g.Expect(recorder.Events).To(BeEmpty(), "no event per child")
	m.RecordCreated(owner, &created)
	g.Expect(recorder.Events).To(Receive(Equal("Normal ChildrenCreated Created ConfigMap first in team, ConfigMap second in team")))

	m.RecordCreated(owner, &Creations{})
	g.Expect(recorder.Events).To(BeEmpty(), "nothing created, nothing told")
}

// A long list is cut to what the events API accepts.
func TestCreationsEventFitsTheEventsAPI(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(1)
	m := &Manager{recorder: recorder}
	var created Creations
	for i := range 100 {
		created.names = append(created.names, fmt.Sprintf("Namespace team-%03d-with-a-long-name", i))
	}
	m.RecordCreated(&corev1.ConfigMap{}, &created)
	var event string
	g.Expect(recorder.Events).To(Receive(&event))
	note := strings.TrimPrefix(event, "Normal ChildrenCreated ")
	g.Expect(len(note)).To(BeNumerically("<=", maxEventNote))
	g.Expect(note).To(HavePrefix("Created Namespace team-000-with-a-long-name, "))
	g.Expect(note).To(HaveSuffix(" …"))
}
