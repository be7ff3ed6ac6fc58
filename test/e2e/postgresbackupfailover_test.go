package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
)

// A failover while a backup fences a replica: the primary's pod is deleted
// while the run's snapshot is still being taken (the local cluster's
// storage is told to take its time), so the fence is held throughout. The
// other replica is promoted, never the fenced one; then the operator is
// killed in the middle of the run and started again; the fence stays as
// long as the snapshot is not ready and is removed once it is; the
// fenced replica follows the new primary; no committed row is lost, no two
// instances accept writes, and a cluster restored from the backup holds
// every row committed before the backup was asked for, as its restore drill
// finds. On a cluster of its
// own, since the operator is killed.
func TestPostgresFailoverDuringBackup(t *testing.T) {
	g := NewWithT(t)
	env := startOwnEnvironment(t, devenv.EnvironmentOptions{
		OperatorArgs: drainOperatorArgs,
		Cluster:      localcluster.Options{Simulations: true, Logf: t.Logf},
	})
	ns := env.newNamespace(t, nil)
	env.newPostgresCluster(t, ns, "db", 3, 1, nil)
	pg := env.waitPostgresReady(t, ns, "db", 3)
	former := pg.Status.CurrentPrimary
	password := env.appSecret(g, ns, "db")["password"]
	env.createWritesTable(t, ns, "db", password)
	stopWatch := env.watchPrimaries(t, ns, "db", 3)
	w := env.startWriter(t, ns, "db", password)
	w.resumes(g, 20, time.Minute)

	for _, i := range pg.Status.Instances {
		if i.Name != former {
			env.setClaimHold(t, ns, i.Name, true)
		}
	}
	w.mu.Lock()
	before := append([]int64(nil), w.ids...)
	w.mu.Unlock()
	bj := env.newPostgresBackupJobTo(t, ns, "nightly", "db", false, &v1alpha1.BackupTarget{Snapshot: &v1alpha1.BackupSnapshotTarget{}},
		func(bj *v1alpha1.BackupJob) {
			bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, SQL: "SELECT count(*) >= 20 FROM writes"}
		})
	var fenced string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		fenced = pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation]
		g.Expect(fenced).NotTo(BeEmpty())
		i := instanceStatus(pg, fenced)
		g.Expect(i).NotTo(BeNil())
		g.Expect(i.Fenced && i.CleanShutdown).To(BeTrue(), "the fenced replica stopped PostgreSQL cleanly")
		g.Expect(env.snapshotsIn(g, ns)).To(HaveLen(1), "the run's snapshot is cut")
	}).WithTimeout(pgBackupTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(fenced).NotTo(Equal(former))
	stopRoles := env.watchRoles(ns, "db")
	t.Logf("%s fenced for the run; its snapshot is held; the primary %s is deleted", fenced, former)

	g.Expect(env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: former}},
		client.GracePeriodSeconds(1))).To(Succeed())
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		promoted = pg.Status.CurrentPrimary
		g.Expect(promoted).NotTo(BeElementOf(former, ""))
		i := instanceStatus(pg, promoted)
		g.Expect(i).NotTo(BeNil())
		g.Expect(i.Role).To(Equal(v1alpha1.PostgresPrimaryRole))
		g.Expect(i.Ready).To(BeTrue())
	}).WithTimeout(pgTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(promoted).NotTo(Equal(fenced), "the fenced replica is never promoted")
	g.Expect(env.postgresCluster(g, ns, "db").Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, fenced),
		"the failover happened while the backup held its fence")
	w.resumes(g, 10, pgTimeout)
	t.Logf("%s promoted while %s stays fenced", promoted, fenced)

	t.Log("The operator killed in the middle of the run, and started again")
	env.operator().Kill()
	startOperatorAgain(t, env)
	g.Consistently(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "db").Annotations).To(HaveKeyWithValue(v1alpha1.PostgresBackupFenceAnnotation, fenced))
		g.Expect(env.snapshotsIn(g, ns)).To(HaveLen(1))
	}).WithTimeout(5*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "the fence stays while the snapshot is taken")

	env.setClaimHold(t, ns, fenced, false)
	var backup snapshotv1.VolumeSnapshot
	g.Eventually(func(g Gomega) {
		snapshots := env.snapshotsIn(g, ns)
		g.Expect(snapshots).To(HaveLen(1))
		backup = snapshots[0]
		g.Expect(backup.Labels).To(HaveKeyWithValue(v1alpha1.BackupResultLabel, "Succeeded"))
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceAnnotation), "no fence remains")
		g.Expect(pg.Annotations).NotTo(HaveKey(v1alpha1.PostgresBackupFenceByAnnotation))
	}).WithTimeout(pgBackupTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(*backup.Spec.Source.PersistentVolumeClaimName).To(Equal(fenced))
	g.Expect(backup.Annotations).To(HaveKeyWithValue(v1alpha1.BackupTimelineAnnotation, "1"), "taken of the replica as it stopped, before the failover")

	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy))
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		g.Expect(pg.Status.CurrentPrimary).To(Equal(promoted))
		for _, i := range pg.Status.Instances {
			g.Expect(i.Fenced).To(BeFalse(), "instance %s", i.Name)
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed(), "the fenced replica follows the new primary")
	w.resumes(g, 10, time.Minute)
	g.Expect(stopRoles()).To(BeEmpty(), "moments when the fenced replica was chosen or ran as primary")
	g.Expect(env.getBackupJobCondition(g, ns, bj.Name, v1alpha1.BackupJobLastRunSucceededCondition)).To(Equal(metav1.ConditionTrue))
	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "db", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")

	env.newPostgresCluster(t, ns, "restored", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: bj.Name}}
	})
	env.waitPostgresReady(t, ns, "restored", 1)
	g.Expect(env.missingRows(t, ns, "restored", env.appSecret(g, ns, "restored")["password"], before)).To(BeZero(),
		"rows committed before the backup was asked for, of %d", len(before))
	g.Eventually(func(g Gomega) {
		c := findCondition(getBackupJob(g, t.Context(), env, bj), v1alpha1.BackupJobVerifiedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed(), "the backup's restore drill")
	t.Logf("%d rows committed, none lost; %d committed before the backup, all restored from it; its drill passed", len(ids), len(before))
}

// setClaimHold makes the local cluster's storage keep the snapshots of a
// claim waiting (simulation.example.com/hold), or take them again.
func (e *environment) setClaimHold(t *testing.T, ns, claim string, hold bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, localcluster.SimulationHoldAnnotation)
	if hold {
		patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, localcluster.SimulationHoldAnnotation)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim}}
	if err := e.Client.Patch(t.Context(), pvc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("hold the snapshots of claim %s: %v", claim, err)
	}
}

// snapshotsIn lists the VolumeSnapshots of namespace ns.
func (e *environment) snapshotsIn(g Gomega, ns string) []snapshotv1.VolumeSnapshot {
	list := &snapshotv1.VolumeSnapshotList{}
	g.Expect(e.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func instanceStatus(pg *v1alpha1.PostgresCluster, name string) *v1alpha1.PostgresInstanceStatus {
	for i := range pg.Status.Instances {
		if pg.Status.Instances[i].Name == name {
			return &pg.Status.Instances[i]
		}
	}
	return nil
}

// watchRoles samples a PostgresCluster every 100 ms until stopped and
// records every moment at which the instance its backup fence names was
// the target or current primary, or reported itself as primary.
func (e *environment) watchRoles(ns, cluster string) (stop func() []string) {
	var seen []string
	stopSampling := sampleEvery(100*time.Millisecond, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		pg := &v1alpha1.PostgresCluster{}
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, pg)
		fenced := pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation]
		if err != nil || fenced == "" {
			return
		}
		i := instanceStatus(pg, fenced)
		if slices.Contains([]string{pg.Status.TargetPrimary, pg.Status.CurrentPrimary}, fenced) || (i != nil && i.Role == v1alpha1.PostgresPrimaryRole) {
			seen = append(seen, fmt.Sprintf("%s: target %s, current %s at %s", fenced, pg.Status.TargetPrimary, pg.Status.CurrentPrimary, time.Now().Format(time.StampMilli)))
		}
	})
	return func() []string {
		stopSampling()
		return seen
	}
}
