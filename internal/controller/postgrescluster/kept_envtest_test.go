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

// A claim kept from an earlier PostgresCluster of the name (and adopted),
// beyond the new one's spec.instances, may hold the most advanced data, which no instance
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
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Annotations: map[string]string{v1alpha1.PostgresAdoptKeptClaimsAnnotation: "db"}},
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

// Claims an earlier PostgresCluster of the name kept hold its data: a new
// cluster of the name starts no instance on them, and says why, until its
// author adopts them (annotation example.com/adopt-kept-claims naming the
// cluster); deleting it meanwhile, with deletionPolicy Delete confirmed,
// leaves them. Adopted, they carry the new cluster's UID and its pods
// start.
func TestKeptClaimsAreTakenOnlyWhenAdopted(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "kept-adopt"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	labels := children.ManagedLabels()
	labels[v1alpha1.PostgresClusterLabel] = "db"
	g.Expect(suite.Client.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: ns, Labels: labels,
			Annotations: map[string]string{v1alpha1.PostgresClusterUIDAnnotation: "uid-of-an-earlier-cluster"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})).To(Succeed())
	newCluster := func(annotations map[string]string) *v1alpha1.PostgresCluster {
		return &v1alpha1.PostgresCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Annotations: annotations},
			Spec: v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15", DeletionPolicy: v1alpha1.DeleteClaims,
				Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
		}
	}
	pods := func(g Gomega) []corev1.Pod {
		list := &corev1.PodList{}
		g.Expect(suite.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}
	claim := func(g Gomega) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-1"}, c)).To(Succeed())
		return c
	}

	// Annotated to adopt another cluster's claims: it adopts none of these.
	pg := newCluster(map[string]string{v1alpha1.PostgresConfirmDeleteAnnotation: "db", v1alpha1.PostgresAdoptKeptClaimsAnnotation: "other"})
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		degraded := meta.FindStatusCondition(getCluster(g, ctx, ns, "db").Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(v1alpha1.PostgresKeptClaimsReason))
		g.Expect(degraded.Message).To(ContainSubstring("PersistentVolumeClaims db-1 were kept from an earlier PostgresCluster db"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Consistently(pods).WithTimeout(3*time.Second).Should(BeEmpty(), "no instance starts on another cluster's data")

	g.Expect(suite.Client.Delete(ctx, pg)).To(Succeed())
	g.Eventually(func() error {
		return suite.Client.Get(ctx, client.ObjectKeyFromObject(pg), &v1alpha1.PostgresCluster{})
	}).WithTimeout(timeout).ShouldNot(Succeed(), "the cluster goes")
	g.Expect(suite.CollectGarbage(ctx, ns, pg.UID)).To(Succeed())
	kept := claim(g)
	g.Expect(kept.DeletionTimestamp).To(BeNil(), "deleting the cluster leaves the claim it never adopted")
	g.Expect(kept.Annotations).To(HaveKeyWithValue(v1alpha1.PostgresClusterUIDAnnotation, "uid-of-an-earlier-cluster"))

	pg = newCluster(map[string]string{v1alpha1.PostgresAdoptKeptClaimsAnnotation: "db"})
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(claim(g).Annotations).To(HaveKeyWithValue(v1alpha1.PostgresClusterUIDAnnotation, string(pg.UID)), "adopted")
		g.Expect(pods(g)).To(HaveLen(1), "its instance starts")
	}).WithTimeout(timeout).Should(Succeed())
}
