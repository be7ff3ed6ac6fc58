package backupjob

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup/pgbackuptest"
)

// Sources refused before any run starts, and the cluster not touched.
func TestSourceProblem(t *testing.T) {
	bj := testBackupJob()
	pgSource := bj.DeepCopy()
	pgSource.Spec.Source = v1alpha1.BackupSource{PostgresCluster: "db"}
	pgSource.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
	pgBaseBackup := pgSource.DeepCopy()
	pgBaseBackup.Spec.Target = &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{}}
	allowed := pgSource.DeepCopy()
	allowed.Spec.Source.AllowPrimaryFencing = true
	rwop := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}}}
	snapshot := bj.DeepCopy()
	snapshot.Spec.Target = &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}}
	pgClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{v1alpha1.PostgresClusterLabel: "db"}}}
	tests := []struct {
		name       string
		bj         *v1alpha1.BackupJob
		obs        observation
		served     bool
		wantReason string
	}{
		{name: "a claim", bj: bj, obs: observation{source: &corev1.PersistentVolumeClaim{}}, served: true},
		{name: "a missing claim", bj: bj, served: true, wantReason: v1alpha1.BackupJobSourceNotFoundReason},
		{name: "a PostgresCluster's claim", bj: bj, obs: observation{source: pgClaim}, served: true, wantReason: v1alpha1.BackupJobSourceIsPostgresClusterReason},
		{name: "a ReadWriteOncePod claim, copied", bj: bj, obs: observation{source: rwop}, served: true, wantReason: v1alpha1.BackupJobSourceNotMountableReason},
		{name: "a ReadWriteOncePod claim, snapshotted", bj: snapshot, obs: observation{source: rwop}, served: true},
		{name: "a missing cluster", bj: pgSource, served: true, wantReason: v1alpha1.BackupJobSourceNotFoundReason},
		{name: "no PostgresCluster API", bj: pgSource, obs: observation{postgres: postgresObservation{cluster: pgbackuptest.Cluster(3)}}, wantReason: v1alpha1.BackupJobSourceNotFoundReason},
		{name: "a cluster with replicas", bj: pgSource, obs: observation{postgres: postgresObservation{cluster: pgbackuptest.Cluster(3)}}, served: true},
		{name: "a single instance", bj: pgSource, obs: observation{postgres: postgresObservation{cluster: pgbackuptest.Cluster(1)}}, served: true, wantReason: v1alpha1.BackupJobPrimaryFencingRefusedReason},
		{name: "a single instance, allowed", bj: allowed, obs: observation{postgres: postgresObservation{cluster: pgbackuptest.Cluster(1)}}, served: true},
		{name: "a single instance, base backups (nothing fenced)", bj: pgBaseBackup, obs: observation{postgres: postgresObservation{cluster: pgbackuptest.Cluster(1)}}, served: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := tc.obs.sourceProblem(tc.bj, tc.served)
			if tc.wantReason == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Reason).To(Equal(tc.wantReason))
		})
	}
}

// A copy Job goes where its ReadWriteOnce source is attached: the node of
// the running pods that mount it.
func TestSourceNode(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}}
	pod := func(node string, phase corev1.PodPhase, claims ...string) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{name: "no pod", want: ""},
		{name: "a running pod", pods: []corev1.Pod{pod("node-b", corev1.PodRunning, "other", "data")}, want: "node-b"},
		{name: "two pods on one node", pods: []corev1.Pod{pod("node-b", corev1.PodRunning, "data"), pod("node-b", corev1.PodPending, "data")}, want: "node-b"},
		{name: "a pod of another claim", pods: []corev1.Pod{pod("node-b", corev1.PodRunning, "other")}, want: ""},
		{name: "a pod not yet scheduled", pods: []corev1.Pod{pod("", corev1.PodPending, "data")}, want: ""},
		{name: "a finished pod", pods: []corev1.Pod{pod("node-a", corev1.PodSucceeded, "data"), pod("node-b", corev1.PodFailed, "data")}, want: ""},
		{name: "pods on two nodes", pods: []corev1.Pod{pod("node-a", corev1.PodRunning, "data"), pod("node-b", corev1.PodRunning, "data")}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(sourceNode(claim, tc.pods)).To(Equal(tc.want))
		})
	}

	g := NewWithT(t)
	modes := func(m ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: m}}
	}
	g.Expect(mountableOnOneNode(modes(corev1.ReadWriteOnce))).To(BeTrue())
	g.Expect(mountableOnOneNode(modes(corev1.ReadWriteOnce, corev1.ReadOnlyMany))).To(BeFalse(), "any node may mount it read-only")
	g.Expect(mountableOnOneNode(modes(corev1.ReadWriteMany))).To(BeFalse())
}

// Pinning keeps the template's own node affinity: each of its alternative
// terms gains the node, so that both must hold.
func TestPinToNode(t *testing.T) {
	g := NewWithT(t)
	onNode := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}

	bare := &corev1.PodSpec{}
	pinToNode(bare, "node-b")
	g.Expect(bare.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(Equal(
		[]corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{onNode}}}))

	zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	arch := corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}
	templated := &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{zone}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{arch}},
		}},
	}}}
	pinToNode(templated, "node-b")
	g.Expect(templated.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(Equal([]corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{onNode}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{arch}, MatchFields: []corev1.NodeSelectorRequirement{onNode}},
	}))
}
