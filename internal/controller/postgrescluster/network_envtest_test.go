package postgrescluster_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// A PostgresCluster has its NetworkPolicy, of its own name, owned by it;
// spec.networkPolicy.enabled false deletes it.
func TestNetworkPolicyFollowsTheSpec(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "network-policy"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "db"}
	g.Eventually(func(g Gomega) {
		policy := &networkingv1.NetworkPolicy{}
		g.Expect(suite.Client.Get(ctx, key, policy)).To(Succeed())
		g.Expect(metav1.IsControlledBy(policy, pg)).To(BeTrue(), "owned by the cluster")
		g.Expect(policy.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{v1alpha1.PostgresClusterLabel: "db"}))
	}).WithTimeout(timeout).Should(Succeed())

	pg = getCluster(g, ctx, ns, "db")
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.NetworkPolicy = &v1alpha1.PostgresNetworkPolicy{Enabled: ptr.To(false)}
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(suite.Client.Get(ctx, key, &networkingv1.NetworkPolicy{}))
	}).WithTimeout(timeout).Should(BeTrue(), "deleted once turned off")
}
