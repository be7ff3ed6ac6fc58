package postgrescluster_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

const timeout = 30 * time.Second

// A replica's pod evicted under node pressure stays in phase Failed, with
// its last report ("replica, ready") and no deletionTimestamp. The
// operator replaces it, keeping its claim, and the status never counts it
// ready; nor does it count a replica that says it is ready while the
// primary does not list it among the standbys streaming from it.
func TestFailedPodIsReplacedAndNotCountedReady(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "failed-pod"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 3, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	for _, name := range []string{"db-1", "db-2", "db-3"} {
		g.Eventually(func(g Gomega) { getPod(g, ctx, ns, name) }).WithTimeout(timeout).Should(Succeed())
	}

	t.Log("db-1 is the primary, with db-2 streaming from it; db-3 says it streams too")
	holdLease(g, ctx, ns, "db-primary", "db-1")
	report(g, ctx, ns, "db-1", v1alpha1.PostgresInstanceReport{Role: "primary", Ready: true, Timeline: 1, CurrentLSN: "0/3000000",
		SystemID: "42", Epoch: 1, Standbys: []string{"db-2"}})
	for _, name := range []string{"db-2", "db-3"} {
		report(g, ctx, ns, name, v1alpha1.PostgresInstanceReport{Role: "replica", Ready: true, Timeline: 1,
			ReceivedLSN: "0/3000000", ReplayedLSN: "0/3000000", SystemID: "42", Epoch: 1})
	}
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal("db-1"))
		g.Expect(pg.Status.ReadyInstances).To(Equal("2/3"))
		g.Expect(instance(pg, "db-3").Ready).To(BeFalse())
		g.Expect(condition(pg, v1alpha1.PostgresReplicasReadyCondition)).To(Equal(metav1.ConditionFalse))
		g.Expect(role(g, ctx, ns, "db-3")).To(BeEmpty(), "CLUSTER-ro does not route to db-3")
	}).WithTimeout(timeout).Should(Succeed())

	t.Log("The primary lists db-3 too: every instance is ready")
	report(g, ctx, ns, "db-1", v1alpha1.PostgresInstanceReport{Role: "primary", Ready: true, Timeline: 1, CurrentLSN: "0/3000000",
		SystemID: "42", Epoch: 1, Standbys: []string{"db-2", "db-3"}})
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		g.Expect(condition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue))
		g.Expect(role(g, ctx, ns, "db-3")).To(Equal(v1alpha1.PostgresReplicaRole))
	}).WithTimeout(timeout).Should(Succeed())

	t.Log("db-3's pod is evicted: phase Failed, its last report still says ready, and the primary has not noticed yet")
	evicted := getPod(g, ctx, ns, "db-3")
	evicted.Status.Phase, evicted.Status.Reason = corev1.PodFailed, "Evicted"
	evicted.Status.Message = "The node was low on resource: memory."
	g.Expect(suite.Client.Status().Update(ctx, evicted)).To(Succeed())

	g.Eventually(func(g Gomega) {
		pod := getPod(g, ctx, ns, "db-3")
		g.Expect(pod.UID).NotTo(Equal(evicted.UID), "db-3's pod is made again")
		g.Expect(pod.Status.Phase).NotTo(Equal(corev1.PodFailed))
		claim := &corev1.PersistentVolumeClaim{}
		g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-3"}, claim)).To(Succeed())
		g.Expect(claim.DeletionTimestamp).To(BeNil(), "its claim is kept")
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		g.Expect(pg.Status.ReadyInstances).To(Equal("2/3"))
		g.Expect(instance(pg, "db-3").Ready).To(BeFalse())
		g.Expect(condition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventNotes(g, ctx, ns, "InstanceFailed")).To(ContainElement(
			"Pod db-3 stopped for good (phase Failed, reason Evicted): replaced; its claim is kept"))
	}).WithTimeout(timeout).Should(Succeed())
}

func getCluster(g Gomega, ctx context.Context, ns, name string) *v1alpha1.PostgresCluster {
	pg := &v1alpha1.PostgresCluster{}
	g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pg)).To(Succeed())
	return pg
}

func getPod(g Gomega, ctx context.Context, ns, name string) *corev1.Pod {
	pod := &corev1.Pod{}
	g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
	return pod
}

// report writes r on the pod of instance name, as its instance manager
// would.
func report(g Gomega, ctx context.Context, ns, name string, r v1alpha1.PostgresInstanceReport) {
	data, err := json.Marshal(r)
	g.Expect(err).NotTo(HaveOccurred())
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.PostgresReportAnnotation: string(data)}}})
	g.Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Expect(suite.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// holdLease gives the primary's Lease to holder for an hour, as its
// instance manager takes it.
func holdLease(g Gomega, ctx context.Context, ns, name, holder string) {
	g.Eventually(func(g Gomega) {
		l := &coordinationv1.Lease{}
		g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l)).To(Succeed())
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(holder), ptr.To(int32(3600))
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		g.Expect(suite.Client.Update(ctx, l)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
}

func instance(pg *v1alpha1.PostgresCluster, name string) v1alpha1.PostgresInstanceStatus {
	for _, i := range pg.Status.Instances {
		if i.Name == name {
			return i
		}
	}
	return v1alpha1.PostgresInstanceStatus{}
}

func role(g Gomega, ctx context.Context, ns, name string) string {
	return getPod(g, ctx, ns, name).Labels[v1alpha1.PostgresRoleLabel]
}

func condition(pg *v1alpha1.PostgresCluster, t string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(pg.Status.Conditions, t); c != nil && c.ObservedGeneration == pg.Generation {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// eventNotes are the notes of the events of reason about PostgresCluster
// db.
func eventNotes(g Gomega, ctx context.Context, ns, reason string) []string {
	events := &eventsv1.EventList{}
	g.Expect(suite.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "PostgresCluster" && e.Regarding.Name == "db" && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
