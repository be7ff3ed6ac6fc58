package postgrescluster_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

// An instance whose PostgreSQL refuses spec.parameters (a misspelt name) keeps
// its configuration and says so in its report; the cluster's status names the
// parameter in Degraded (InvalidSpec), and clears it once the instance takes
// the parameters.
func TestRefusedParametersShowInTheStatus(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "refused-parameters"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15", Parameters: map[string]string{"shared_bufers": "1GB"},
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	g.Eventually(func(g Gomega) { getPod(g, ctx, ns, "db-1") }).WithTimeout(timeout).Should(Succeed())
	holdLease(g, ctx, ns, "db-primary", "db-1")
	primary := v1alpha1.PostgresInstanceReport{Role: "primary", Ready: true, Timeline: 1, CurrentLSN: "0/3000000", SystemID: "42", Epoch: 1}
	refused := primary
	refused.ParametersRefused = `PostgreSQL refuses spec.parameters, the instance keeps its configuration: spec.parameters.shared_bufers: unrecognized configuration parameter "shared_bufers"`
	report(g, ctx, ns, "db-1", refused)
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		degraded := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(v1alpha1.PostgresInvalidSpecReason))
		g.Expect(degraded.Message).To(ContainSubstring("Instance db-1: PostgreSQL refuses spec.parameters"))
		g.Expect(degraded.Message).To(ContainSubstring("spec.parameters.shared_bufers"))
		g.Expect(pg.Status.CurrentPrimary).To(Equal("db-1"), "the primary keeps running")
	}).WithTimeout(timeout).Should(Succeed())

	report(g, ctx, ns, "db-1", primary)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getCluster(g, ctx, ns, "db"), v1alpha1.PostgresDegradedCondition)).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).Should(Succeed())
}
