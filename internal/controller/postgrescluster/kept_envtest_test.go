package postgrescluster_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// A claim kept from an earlier PostgresCluster of the name, beyond the new
// one's spec.instances, may hold the most advanced data, which no instance
// would read: the cluster does not choose its first primary, and its status
// says why and what to do, until spec.instances counts the claim.
func TestKeptClaimBeyondTheInstancesHoldsTheFirstStart(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "kept-beyond"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	labels := children.ManagedLabels()
	labels[v1alpha1.PostgresClusterLabel] = "db"
	g.Expect(suite.Client.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "db-3", Namespace: ns, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})).To(Succeed())
	// Older than the cluster by its creation timestamp, which counts whole
	// seconds.
	time.Sleep(time.Second)
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 2, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresInitializing))
		g.Expect(pg.Status.TargetPrimary).To(BeEmpty(), "no first primary chosen")
		ready := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(ContainSubstring("The claims db-3 were kept from an earlier PostgresCluster db, beyond spec.instances (2)"))
	}).WithTimeout(timeout).Should(Succeed())

	pg = getCluster(g, ctx, ns, "db")
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Instances = 3
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready := meta.FindStatusCondition(getCluster(g, ctx, ns, "db").Status.Conditions, v1alpha1.PostgresReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(ContainSubstring("Waiting for db-3, whose claims were kept"), "it waits for db-3's report now")
	}).WithTimeout(timeout).Should(Succeed())
}
