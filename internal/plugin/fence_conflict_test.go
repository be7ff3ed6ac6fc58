package plugin

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"example.com/platform-operator/api/v1alpha1"
)

// Another writer fences db-3 between the plugin's read and its patch of
// the list: the patch, made under the resourceVersion read, is refused
// and made again from the new list, so db-3 stays fenced. A plain merge
// patch of the list would have dropped it.
func TestFenceDoesNotClobberAConcurrentFence(t *testing.T) {
	raced := false
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(inShop(cluster(nil))).
		WithStatusSubresource(&v1alpha1.PostgresCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if !raced {
				raced = true
				other := &v1alpha1.PostgresCluster{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
					return err
				}
				other.Spec.FencedInstances = append(other.Spec.FencedInstances, "db-3")
				if err := c.Update(ctx, other); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	var out bytes.Buffer
	cmd := newCommand(&options{flags: genericclioptions.NewConfigFlags(true), now: time.Now, testClient: c,
		streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}})
	cmd.SetArgs([]string{"pg", "fence", "db", "db-2", "-n", "shop"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("fence: %v\n%s", err, out.String())
	}
	got := get(t, c, "db", &v1alpha1.PostgresCluster{}).Spec.FencedInstances
	if !raced || !slices.Equal(got, []string{"db-3", "db-2"}) {
		t.Errorf("fencedInstances %v (raced %t), want the other writer's db-3 kept and db-2 added", got, raced)
	}
}
