package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
)

// A drain of the primary's node, as kubectl drain does it: the node is
// cordoned, then its pods are evicted through the Eviction API, which the
// disruption budgets judge. The primary's budget allows no eviction, so
// the drain waits while the operator switches over to a replica on another
// node; then the former primary, a replica now, may go, and comes back on
// a node that is not cordoned. The writer loses no committed row and no two
// instances ever accept writes. Then the operator is killed in the middle
// of a failover and started again: the failover completes, still without
// two primaries or a lost row. Last, kube-apiserver is stopped for three
// times the primary's lease: the database keeps taking writes throughout,
// and is healthy again once the API server is back. On a cluster of its
// own, of three nodes
// (one per instance), so that the cordon and the operator's restart touch
// no other test's cluster.
func TestPostgresClusterDrainAndOperatorCrash(t *testing.T) {
	g := NewWithT(t)
	env := startOwnEnvironment(t, devenv.EnvironmentOptions{
		OperatorArgs: drainOperatorArgs,
		Cluster:      localcluster.Options{Simulations: true, Nodes: 3, Logf: t.Logf},
	})

	ns := env.newNamespace(t, nil)
	env.newPostgresCluster(t, ns, "db", 3, 1, nil)
	pg := env.waitPostgresReady(t, ns, "db", 3)
	password := env.appSecret(g, ns, "db")["password"]
	env.createWritesTable(t, ns, "db", password)
	stopWatch := env.watchPrimaries(t, ns, "db", 3)
	w := env.startWriter(t, ns, "db", password)
	w.resumes(g, 20, time.Minute)

	former := pg.Status.CurrentPrimary
	pod := &corev1.Pod{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: former}, pod)).To(Succeed())
	nodeName := pod.Spec.NodeName
	g.Expect(nodeName).NotTo(BeEmpty())

	t.Logf("kubectl drain %s: cordoned, then %s evicted", nodeName, former)
	node := &corev1.Node{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Name: nodeName}, node)).To(Succeed())
	cordoned := node.DeepCopy()
	cordoned.Spec.Unschedulable = true
	g.Expect(env.Client.Patch(t.Context(), cordoned, client.MergeFrom(node))).To(Succeed())
	drained := time.Now()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: former}}
	refusals := 0
	g.Eventually(func() error {
		err := env.Client.SubResource("eviction").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: former}}, eviction)
		switch {
		case err == nil:
			return nil
		case apierrors.IsTooManyRequests(err):
			// What a disruption budget answers: 429, "would violate
			// the pod's disruption budget"; kubectl drain retries it.
			refusals++
			return err
		default:
			return StopTrying("the eviction failed otherwise than by a disruption budget").Wrap(err)
		}
	}).WithTimeout(pgTimeout).WithPolling(500*time.Millisecond).Should(Succeed(), "the eviction, once the primary moved")
	g.Expect(refusals).To(BeNumerically(">", 0), "the primary's budget refused its eviction before the switchover")

	var promoted string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).NotTo(Equal(former))
		promoted = pg.Status.CurrentPrimary
		p := &corev1.Pod{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: promoted}, p)).To(Succeed())
		g.Expect(p.Spec.NodeName).NotTo(Equal(nodeName), "the new primary runs elsewhere")
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 20, time.Minute)
	t.Logf("%s promoted on another node; %s evicted %s after the cordon", promoted, former, time.Since(drained).Round(100*time.Millisecond))

	t.Logf("%s comes back as a replica, on a node that is not cordoned", former)
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		p := &corev1.Pod{}
		g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: former}, p)).To(Succeed())
		g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
		g.Expect(p.Spec.NodeName).NotTo(Equal(nodeName))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)

	t.Logf("The operator killed during a failover of %s, and started again", promoted)
	g.Expect(env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: promoted}},
		client.GracePeriodSeconds(1))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "db").Status.Phase).To(Equal(v1alpha1.PostgresFailingOver))
	}).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(Succeed(), "the failover started")
	env.operator().Kill()
	killed := time.Now()
	startOperatorAgain(t, env)
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).NotTo(Equal(promoted))
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy))
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	t.Logf("%s is the primary, %s after the operator was killed (its successor waits for the election Lease to lapse)",
		env.postgresCluster(g, ns, "db").Status.CurrentPrimary, time.Since(killed).Round(100*time.Millisecond))

	apiServerOutage(t, env, ns, w)

	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "db", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
	t.Logf("%d rows committed through db-rw, none lost; %d writes failed while no primary was routed", len(ids), w.failures.Load())
}

// apiServerOutage stops kube-apiserver for 30 s, three times the primary's
// lease: nobody can renew or take the lease, so no replica is promoted,
// and the primary, whose replicas all still stream from it, keeps taking
// writes (it fences itself only when it is cut off from them too). The
// operator exits once its own election lease lapses, as in a pod, and is
// started again, as its Deployment would; the cluster is Healthy again.
func apiServerOutage(t *testing.T, env *environment, ns string, w *pgWriter) {
	g := NewWithT(t)
	primary := env.postgresCluster(g, ns, "db").Status.CurrentPrimary
	t.Logf("kube-apiserver stopped for 30 s; %s is the primary", primary)
	g.Expect(env.Cluster.StopComponent(localcluster.APIServer)).To(Succeed())
	stopped, before := time.Now(), w.committed.Load()
	restarted := false
	defer func() {
		if !restarted {
			_ = env.Cluster.StartComponent(localcluster.APIServer)
		}
	}()
	w.resumes(g, 20, 20*time.Second)
	time.Sleep(time.Until(stopped.Add(25 * time.Second)))
	w.resumes(g, 20, 5*time.Second)
	t.Logf("%d rows committed while the API server was down, the last after %s", w.committed.Load()-before, time.Since(stopped).Round(100*time.Millisecond))
	time.Sleep(time.Until(stopped.Add(30 * time.Second)))
	g.Expect(env.Cluster.StartComponent(localcluster.APIServer)).To(Succeed())
	restarted = true
	g.Eventually(func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
	}).WithTimeout(time.Minute).Should(Succeed(), "the API server answers again")

	if exited, _ := env.operator().Exited(); exited {
		startOperatorAgain(t, env)
	}
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal(primary), "no failover for an API server outage")
		g.Expect(pg.Status.Phase).To(Equal(v1alpha1.PostgresHealthy))
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)
	t.Logf("Healthy again %s after kube-apiserver was started again", time.Since(stopped.Add(30*time.Second)).Round(100*time.Millisecond))
}

// drainOperatorArgs are the flags of the drain test's operator, each time
// it is started.
var drainOperatorArgs = []string{"--all-namespaces", "--verbose"}

// startOperatorAgain starts the drain test's operator again, with the
// flags it was first started with, as its Deployment would once it was
// killed or exited.
func startOperatorAgain(t *testing.T, env *environment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := env.StartOperator(ctx, drainOperatorArgs...); err != nil {
		t.Fatalf("start the operator again: %v", err)
	}
}
