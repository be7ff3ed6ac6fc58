package postgrescluster

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/platform-operator/api/v1alpha1"
)

// The budgets count what must stay available, which the disruption
// controller computes without the owner's scale subresource: the primary's
// allows no eviction, the replicas' one at a time, and below three
// instances there is no replicas' budget, which the reconciler deletes.
func TestBudgets(t *testing.T) {
	type budget struct {
		role         string
		minAvailable int
	}
	tests := []struct {
		name      string
		instances int32
		want      map[string]budget
		unwanted  []string
	}{
		{"one instance", 1, map[string]budget{"db-primary": {"primary", 1}}, []string{"db-replicas"}},
		{"two instances: one replica, no budget to block its eviction", 2,
			map[string]budget{"db-primary": {"primary", 1}}, []string{"db-replicas"}},
		{"three instances: one of two replicas at a time", 3,
			map[string]budget{"db-primary": {"primary", 1}, "db-replicas": {"replica", 1}}, nil},
		{"five instances: one of four replicas at a time", 5,
			map[string]budget{"db-primary": {"primary", 1}, "db-replicas": {"replica", 3}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pg := testCluster()
			pg.Spec.Instances = tt.instances
			got := map[string]budget{}
			for _, config := range DesiredBudgets(pg) {
				data, err := json.Marshal(config)
				g.Expect(err).NotTo(HaveOccurred())
				pdb := &policyv1.PodDisruptionBudget{}
				g.Expect(json.Unmarshal(data, pdb)).To(Succeed())

				g.Expect(pdb.Namespace).To(Equal("shop"))
				g.Expect(pdb.Labels).To(HaveKeyWithValue(v1alpha1.PostgresClusterLabel, "db"))
				g.Expect(pdb.OwnerReferences).To(HaveLen(1))
				g.Expect(pdb.Spec.MaxUnavailable).To(BeNil(), "%s: maxUnavailable needs the owner's scale subresource", pdb.Name)
				g.Expect(pdb.Spec.MinAvailable).NotTo(BeNil())
				g.Expect(pdb.Spec.MinAvailable.Type).To(Equal(intstr.Int), "%s: a percentage needs the owner's scale subresource", pdb.Name)
				g.Expect(pdb.Spec.UnhealthyPodEvictionPolicy).To(HaveValue(Equal(policyv1.AlwaysAllow)))
				g.Expect(pdb.Spec.Selector.MatchExpressions).To(BeEmpty())
				g.Expect(pdb.Spec.Selector.MatchLabels).To(HaveLen(2))
				g.Expect(pdb.Spec.Selector.MatchLabels).To(HaveKeyWithValue(v1alpha1.PostgresClusterLabel, "db"))
				got[pdb.Name] = budget{pdb.Spec.Selector.MatchLabels[v1alpha1.PostgresRoleLabel], pdb.Spec.MinAvailable.IntValue()}
			}
			g.Expect(got).To(Equal(tt.want))
			g.Expect(unwantedBudgets(pg)).To(Equal(tt.unwanted))
		})
	}
}
