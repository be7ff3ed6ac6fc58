package children

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

type labelSet = labels.Set

// The writer does not trust a cached status equal to the new one when its
// own last write was different: the cache may not show that write yet.
func TestStatusWriterDoesNotTrustAStaleCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", UID: "u1"}}
	patches := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(d).WithStatusSubresource(d).Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	w := NewStatusWriter(c)
	write := func(cached appsv1.DeploymentStatus, next appsv1.DeploymentStatus) bool {
		before := d.DeepCopy()
		before.Status = cached
		after := before.DeepCopy()
		after.Status = next
		wrote, err := w.Patch(ctx, before, after, before.Status, after.Status)
		g.Expect(err).NotTo(HaveOccurred())
		if wrote {
			stored := &appsv1.Deployment{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(d), stored)).To(Succeed())
			g.Expect(stored.Status).To(Equal(next), "the API server holds what was written, whatever the cache showed")
		}
		return wrote
	}
	one, two := appsv1.DeploymentStatus{Replicas: 1}, appsv1.DeploymentStatus{Replicas: 2}

	g.Expect(write(one, one)).To(BeFalse(), "nothing new, nothing written before: no write")
	g.Expect(write(one, two)).To(BeTrue())
	g.Expect(write(two, two)).To(BeFalse(), "the cache caught up with the write")
	g.Expect(write(two, one)).To(BeTrue())
	g.Expect(write(two, one)).To(BeTrue(), "the cache shows 2 although 1 was written: a stale cache or another writer, which the writer cannot tell apart, so it writes")
	g.Expect(write(one, two)).To(BeTrue(), "a stale cache showing 1 while 1 was last written: 2 is new")
	g.Expect(write(one, one)).To(BeTrue(), "equal to a cache that may be stale, but the last write was 2: write")
	g.Expect(patches).To(Equal(5))
}
