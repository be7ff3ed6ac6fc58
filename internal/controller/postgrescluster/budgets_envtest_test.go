package postgrescluster_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/platform"
)

// The budgets follow spec.instances: a budget of the earlier shape
// (maxUnavailable, which no disruption controller can compute for a
// PostgresCluster) becomes a minAvailable one, the replicas' budget is
// deleted when a scale-down leaves fewer than three instances, and made
// again when they are three.
func TestBudgetsFollowTheInstances(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "budgets"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 3, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	getBudget := func(g Gomega, name string) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pdb)).To(Succeed())
		return pdb
	}
	minAvailable := func(name string, want int32) func(g Gomega) {
		return func(g Gomega) {
			pdb := getBudget(g, name)
			g.Expect(pdb.Spec.MaxUnavailable).To(BeNil())
			g.Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(want))))
		}
	}
	g.Eventually(minAvailable("db-primary", 1)).WithTimeout(timeout).Should(Succeed())
	g.Eventually(minAvailable("db-replicas", 1)).WithTimeout(timeout).Should(Succeed())

	t.Log("db-replicas set back to the shape of the operator's earlier version")
	old := getBudget(g, "db-replicas")
	old.Spec.MinAvailable, old.Spec.MaxUnavailable = nil, ptr.To(intstr.FromInt32(1))
	g.Expect(suite.Client.Update(ctx, old, client.FieldOwner(platform.Name))).To(Succeed())
	g.Eventually(minAvailable("db-replicas", 1)).WithTimeout(timeout).Should(Succeed())

	scale := func(instances int32) {
		pg := getCluster(g, ctx, ns, "db")
		patch := client.MergeFrom(pg.DeepCopy())
		pg.Spec.Instances = instances
		g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	}
	t.Log("Scaled down to two instances: no replicas' budget")
	scale(2)
	g.Eventually(func() error {
		return suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-replicas"}, &policyv1.PodDisruptionBudget{})
	}).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound))
	g.Consistently(minAvailable("db-primary", 1)).WithTimeout(timeout / 10).Should(Succeed())

	t.Log("Scaled up to three instances: the replicas' budget again")
	scale(3)
	g.Eventually(minAvailable("db-replicas", 1)).WithTimeout(timeout).Should(Succeed())
}
