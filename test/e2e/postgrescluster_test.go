package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/pgspec"
)

// These tests run real PostgreSQL on the local cluster: the simulation
// part of the local cluster runs each PostgresCluster pod's instance
// manager (the operator's binary) as a host process in a network namespace
// of its own, and a loopback proxy per Service stands in for kube-proxy.
// The tests reach the databases only through those: the Services' loopback
// addresses and the pods' own namespaces' addresses.

// postgresEnv is the cluster of the PostgresCluster tests, with the
// simulation parts that run real PostgreSQL; they share it.
var (
	postgresEnv     *environment
	postgresEnvErr  error
	postgresEnvOnce sync.Once
)

// pgEnvironment starts postgresEnv the first time a test asks for it.
func pgEnvironment(t *testing.T) *environment {
	t.Helper()
	postgresEnvOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		postgresEnv, postgresEnvErr = newEnvironment(ctx, envOptions{simulations: true})
	})
	if postgresEnvErr != nil {
		t.Fatal("set up the PostgreSQL cluster:", postgresEnvErr)
	}
	return postgresEnv
}

// pgNamespace gives a test the PostgreSQL cluster and a namespace of its
// own on it, deleted when the test ends: the databases a test started
// stop with it, rather than go on running through every test after it,
// idle but not free (instance managers, leases, status reports, the
// operator's reconciles), on a machine of two cores.
func pgNamespace(t *testing.T) (*environment, string) {
	t.Helper()
	env := pgEnvironment(t)
	ns := env.newNamespace(t, nil)
	t.Cleanup(func() { env.deleteNamespace(t, ns) })
	return env, ns
}

// deleteNamespace deletes ns and waits, for at most pgTimeout, until it is
// gone: its pods' processes have stopped.
func (e *environment) deleteNamespace(t *testing.T, ns string) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	g.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, namespace))).To(Succeed())
	g.Eventually(func() error { return e.Client.Get(ctx, client.ObjectKeyFromObject(namespace), &corev1.Namespace{}) }).
		WithTimeout(pgTimeout).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "namespace %s gone, its databases stopped", ns)
}

// pgTimeout bounds a PostgresCluster's start: three instances, one
// initdb and two clones, on a loaded two-core machine.
const pgTimeout = 3 * time.Minute

func (e *environment) newPostgresCluster(t *testing.T, ns, name string, instances, synchronous int32, change func(*v1alpha1.PostgresCluster)) *v1alpha1.PostgresCluster {
	t.Helper()
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: instances, Synchronous: synchronous, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("256Mi")}},
	}
	if change != nil {
		change(pg)
	}
	if err := e.Client.Create(t.Context(), pg); err != nil {
		t.Fatal(err)
	}
	return pg
}

func (e *environment) postgresCluster(g Gomega, ns, name string) *v1alpha1.PostgresCluster {
	pg := &v1alpha1.PostgresCluster{}
	g.Expect(e.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pg)).To(Succeed())
	return pg
}

func pgCondition(pg *v1alpha1.PostgresCluster, conditionType string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(pg.Status.Conditions, conditionType); c != nil && c.ObservedGeneration == pg.Generation {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// waitReady waits until every instance of pg serves and returns the
// cluster.
func (e *environment) waitPostgresReady(t *testing.T, ns, name string, instances int) *v1alpha1.PostgresCluster {
	t.Helper()
	var pg *v1alpha1.PostgresCluster
	NewWithT(t).Eventually(func(g Gomega) {
		pg = e.postgresCluster(g, ns, name)
		g.Expect(pgCondition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue), "%+v", pg.Status)
		g.Expect(pg.Status.ReadyInstances).To(Equal(fmt.Sprintf("%d/%d", instances, instances)))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	return pg
}

// serviceAddress is the loopback address the simulation gives a Service.
func (e *environment) serviceAddress(g Gomega, ns, service string) (string, int) {
	svc := &corev1.Service{}
	g.Expect(e.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: service}, svc)).To(Succeed())
	address := svc.Annotations[localcluster.SimulationAddressAnnotation]
	g.Expect(address).NotTo(BeEmpty(), "the simulation's address of Service %s", service)
	host, port, err := net.SplitHostPort(address)
	g.Expect(err).NotTo(HaveOccurred())
	n, err := strconv.Atoi(port)
	g.Expect(err).NotTo(HaveOccurred())
	return host, n
}

// appSecret reads the application's Secret of a cluster.
func (e *environment) appSecret(g Gomega, ns, cluster string) map[string]string {
	s := &corev1.Secret{}
	g.Expect(e.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: cluster + "-app"}, s)).To(Succeed())
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// connectService connects as the application through a Service's
// simulated address.
func (e *environment) connectService(ctx context.Context, g Gomega, ns, service, password string) (*pgx.Conn, error) {
	host, port := e.serviceAddress(g, ns, service)
	return postgres.Connect(ctx, postgres.ConnInfo{Host: host, Port: port, User: "app", Password: password, DBName: "app"})
}

// connectWhenRouted connects through a Service once it routes to a ready
// endpoint: as for any client of a Service, the cluster may turn Ready a
// moment before its EndpointSlices say so.
func (e *environment) connectWhenRouted(t *testing.T, ns, service, password string) *pgx.Conn {
	t.Helper()
	var conn *pgx.Conn
	NewWithT(t).Eventually(func(g Gomega) {
		c, err := e.connectService(t.Context(), g, ns, service, password)
		g.Expect(err).NotTo(HaveOccurred())
		conn = c
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	return conn
}

// createWritesTable makes the table of startWriter, through CLUSTER-rw.
func (e *environment) createWritesTable(t *testing.T, ns, cluster, password string) {
	t.Helper()
	conn := e.connectWhenRouted(t, ns, cluster+"-rw", password)
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE writes (id bigint PRIMARY KEY, timeline int)"); err != nil {
		t.Fatalf("create the writer's table: %v", err)
	}
}

// startWrittenCluster creates a PostgresCluster, waits until every
// instance serves, and starts a writer through CLUSTER-rw, returning once
// it committed 10 rows: the cluster as it is, the application password
// and the writer.
func (e *environment) startWrittenCluster(t *testing.T, ns, name string, instances, synchronous int32, change func(*v1alpha1.PostgresCluster)) (*v1alpha1.PostgresCluster, string, *pgWriter) {
	t.Helper()
	g := NewWithT(t)
	e.newPostgresCluster(t, ns, name, instances, synchronous, change)
	pg := e.waitPostgresReady(t, ns, name, int(instances))
	password := e.appSecret(g, ns, name)["password"]
	e.createWritesTable(t, ns, name, password)
	w := e.startWriter(t, ns, name, password)
	w.resumes(g, 10, time.Minute)
	return pg, password, w
}

// otherThan is the instance of a two-instance cluster that is not name.
func otherThan(cluster, name string) string {
	if name == cluster+"-1" {
		return cluster + "-2"
	}
	return cluster + "-1"
}

// pgWriter inserts a row every 50 ms through CLUSTER-rw, recording each row
// whose commit returned, with the timeline it was written on.
type pgWriter struct {
	committed atomic.Int64
	failures  atomic.Int64
	mu        sync.Mutex
	ids       []int64
	// afterCommit, when recorded, is the primary's WAL position read
	// after each row's commit returned: the commit record ends before it.
	afterCommit map[int64]postgres.LSN
	stop        chan struct{}
	done        chan struct{}
}

func (e *environment) startWriter(t *testing.T, ns, cluster, password string) *pgWriter {
	return e.startWriterWith(t, ns, cluster, password, false)
}

// startWriterWith starts a writer that also records, when recordLSN, the
// WAL position after each commit (one more query per row).
func (e *environment) startWriterWith(t *testing.T, ns, cluster, password string, recordLSN bool) *pgWriter {
	t.Helper()
	g := NewWithT(t)
	host, port := e.serviceAddress(g, ns, cluster+"-rw")
	w := &pgWriter{stop: make(chan struct{}), done: make(chan struct{})}
	if recordLSN {
		w.afterCommit = map[int64]postgres.LSN{}
	}
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for id := int64(1); ; id++ {
			select {
			case <-w.stop:
				return
			case <-ticker.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if conn == nil {
				conn, _ = postgres.Connect(ctx, postgres.ConnInfo{Host: host, Port: port, User: "app", Password: password, DBName: "app"})
			}
			if conn != nil {
				_, err := conn.Exec(ctx, "INSERT INTO writes (id, timeline) VALUES ($1, (SELECT timeline_id FROM pg_control_checkpoint()))", id)
				if err != nil {
					w.failures.Add(1)
					conn.Close(ctx)
					conn = nil
				} else {
					var after string
					if recordLSN && conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&after) != nil {
						after = ""
					}
					w.mu.Lock()
					w.ids = append(w.ids, id)
					if lsn, err := postgres.ParseLSN(after); err == nil && recordLSN {
						w.afterCommit[id] = lsn
					}
					w.mu.Unlock()
					w.committed.Add(1)
				}
			}
			cancel()
		}
	}()
	t.Cleanup(func() { w.halt() })
	return w
}

func (w *pgWriter) halt() []int64 {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.ids...)
}

// acknowledged are the rows whose commit returned so far, while the writer
// goes on.
func (w *pgWriter) acknowledged() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.ids...)
}

// resumes waits until the writer commits n more rows.
func (w *pgWriter) resumes(g Gomega, n int64, within time.Duration) {
	before := w.committed.Load()
	g.Eventually(w.committed.Load).WithTimeout(within).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", before+n))
}

// missing counts the rows of ids that the cluster's primary lacks.
func (e *environment) missingRows(t *testing.T, ns, cluster, password string, ids []int64) int {
	t.Helper()
	g := NewWithT(t)
	var missing int
	g.Eventually(func(g Gomega) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := e.connectService(ctx, g, ns, cluster+"-rw", password)
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(ctx)
		present := map[int64]bool{}
		rows, err := conn.Query(ctx, "SELECT id FROM writes")
		g.Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			var id int64
			g.Expect(rows.Scan(&id)).To(Succeed())
			present[id] = true
		}
		g.Expect(rows.Err()).NotTo(HaveOccurred())
		missing = 0
		for _, id := range ids {
			if !present[id] {
				missing++
			}
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	return missing
}

// watchPrimaries samples every instance of a cluster every 100 ms through
// its Unix socket, and records every moment at which more than one
// answered as a primary (accepted a write transaction). The socket, not the
// pod's address: an instance cut off from the network still serves the
// clients on its side of the cut, and a primary that does so while another
// was promoted is two primaries, though no client of the Services sees it.
func (e *environment) watchPrimaries(t *testing.T, ns, cluster string, instances int) (stop func() []string) {
	var seen []string
	stopSampling := sampleEvery(100*time.Millisecond, func() {
		var primaries []string
		for n := 1; n <= instances; n++ {
			pod := fmt.Sprintf("%s-%d", cluster, n)
			socketDir, err := e.Cluster.PostgresSocketDir(ns, pod)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			// The socket is trusted: it is the pod's own (see postgres.RenderHBA).
			conn, err := postgres.Connect(ctx, postgres.ConnInfo{Host: socketDir, Port: pgspec.Port, User: "app", DBName: "app"})
			if err == nil {
				var recovery bool
				if conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery) == nil && !recovery {
					primaries = append(primaries, pod)
				}
				conn.Close(ctx)
			}
			cancel()
		}
		if len(primaries) > 1 {
			seen = append(seen, fmt.Sprintf("%v at %s", primaries, time.Now().Format(time.StampMilli)))
		}
	})
	return func() []string {
		stopSampling()
		return seen
	}
}

// superuserOverSocket connects to pod's PostgreSQL through its Unix socket
// (trusted: it is the pod's own, see postgres.RenderHBA) as the superuser,
// who alone sees every role's sessions and WAL senders.
func (e *environment) superuserOverSocket(ctx context.Context, ns, pod string) (*pgx.Conn, error) {
	socketDir, err := e.Cluster.PostgresSocketDir(ns, pod)
	if err != nil {
		return nil, err
	}
	return postgres.Connect(ctx, postgres.ConnInfo{Host: socketDir, Port: pgspec.Port, User: postgres.SuperUser, DBName: "postgres"})
}

// sampleEvery calls probe every interval, one call at a time, until the
// returned stop is called; stop returns once the last call ended, and may
// be called more than once.
func sampleEvery(interval time.Duration, probe func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ticker.C:
			}
			probe()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

func (e *environment) patchPostgresCluster(t *testing.T, ns, name string, change func(*v1alpha1.PostgresCluster)) {
	t.Helper()
	g := NewWithT(t)
	pg := e.postgresCluster(g, ns, name)
	patch := client.MergeFrom(pg.DeepCopy())
	change(pg)
	g.Expect(e.Client.Patch(t.Context(), pg, patch)).To(Succeed())
}

// A three-instance cluster with a synchronous standby and a writer through
// CLUSTER-rw: the primary's pod deleted with a 1 s grace period fails over
// to a replica, CLUSTER-rw follows it, writes resume, and the new pet
// rejoins as a replica on the new timeline; PostgreSQL killed inside the
// primary is restarted in place, without a failover (failoverDelay); a
// switchover on spec.primary; every row whose commit returned is there,
// and never two primaries.
func TestPostgresClusterFailoverLosesNoCommittedRow(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "db", 3, 1, func(pg *v1alpha1.PostgresCluster) { pg.Spec.FailoverDelay = 30 })
	pg := env.waitPostgresReady(t, ns, "db", 3)
	g.Expect(pg.Status.CurrentPrimary).To(Equal("db-1"))
	password := env.appSecret(g, ns, "db")["password"]

	env.createWritesTable(t, ns, "db", password)
	stopWatch := env.watchPrimaries(t, ns, "db", 3)
	w := env.startWriter(t, ns, "db", password)
	w.resumes(g, 20, time.Minute)

	t.Log("PostgreSQL killed inside the primary: restarted in place, no failover")
	g.Expect(env.Cluster.KillPostgres(ns, "db-1")).To(Succeed())
	w.resumes(g, 20, time.Minute)
	g.Expect(env.postgresCluster(g, ns, "db").Status.CurrentPrimary).To(Equal("db-1"))

	t.Log("The primary's pod deleted with a 1 s grace period: a replica is promoted")
	deleted := time.Now()
	g.Expect(env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-1"}},
		client.GracePeriodSeconds(1))).To(Succeed())
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(BeElementOf("db-2", "db-3"))
		promoted = pg.Status.CurrentPrimary
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	w.resumes(g, 1, time.Minute)
	t.Logf("%s promoted; the first write through db-rw committed %s after the deletion", promoted, time.Since(deleted).Round(100*time.Millisecond))

	t.Log("The new pet db-1 rejoins as a replica on the new timeline")
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "db")
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		var timelines []int64
		for _, i := range pg.Status.Instances {
			timelines = append(timelines, i.Timeline)
			if i.Name == "db-1" {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
			}
		}
		g.Expect(timelines).To(HaveEach(BeNumerically(">=", 2)), "every instance on the new timeline")
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())

	t.Log("Switchover back to db-1 on spec.primary, the writer running")
	env.patchPostgresCluster(t, ns, "db", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Primary = "db-1" })
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "db").Status.CurrentPrimary).To(Equal("db-1"))
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	w.resumes(g, 10, time.Minute)

	ids := w.halt()
	g.Expect(env.missingRows(t, ns, "db", password, ids)).To(BeZero(), "rows whose commit returned, of %d", len(ids))
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
	t.Logf("%d rows committed through db-rw, none lost; %d writes failed while no primary was routed", len(ids), w.failures.Load())
}

// The primary cut off from the network (its namespace's link down) stops
// accepting writes within the lease's time (seen through its socket, as a
// client on its side of the cut would), a replica is promoted, and when
// the link returns the former primary rejoins as a replica without
// diverging.
func TestPostgresClusterPrimaryCutOff(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "cut", 2, 0, nil)
	env.waitPostgresReady(t, ns, "cut", 2)
	stopWatch := env.watchPrimaries(t, ns, "cut", 2)

	g.Expect(env.Cluster.CutOffPostgres(ns, "cut-1")).To(Succeed())
	cut := time.Now()
	t.Cleanup(func() { _ = env.Cluster.ReconnectPostgres(ns, "cut-1") })
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "cut").Status.CurrentPrimary).To(Equal("cut-2"))
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("cut-2 promoted %s after cut-1 was cut off", time.Since(cut).Round(100*time.Millisecond))

	g.Expect(env.Cluster.ReconnectPostgres(ns, "cut-1")).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "cut")
		g.Expect(pg.Status.ReadyInstances).To(Equal("2/2"))
		for _, i := range pg.Status.Instances {
			if i.Name == "cut-1" {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
			}
		}
	}).WithTimeout(pgTimeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(stopWatch()).To(BeEmpty(), "moments when two instances accepted writes")
}

// The day-to-day: a password changed in its Secret is used by a new
// connection; storage grows in place; hibernation keeps the data and the
// primary; scaling down and back up; and deletion keeps the claims.
func TestPostgresClusterOperations(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "ops", 2, 0, nil)
	env.waitPostgresReady(t, ns, "ops", 2)
	password := env.appSecret(g, ns, "ops")["password"]
	conn := env.connectWhenRouted(t, ns, "ops-rw", password)
	_, err := conn.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')")
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close(t.Context())

	t.Log("A password changed in the Secret")
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "ops-app"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("changed-by-a-person")
	g.Expect(env.Client.Update(t.Context(), secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "ops").Status.Credentials.AppliedVersion).To(Equal(secret.ResourceVersion))
		conn, err := env.connectService(t.Context(), g, ns, "ops-rw", "changed-by-a-person")
		g.Expect(err).NotTo(HaveOccurred())
		conn.Close(t.Context())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	password = "changed-by-a-person"

	t.Log("Storage grows in place")
	env.patchPostgresCluster(t, ns, "ops", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Storage.Size = resource.MustParse("512Mi") })
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"ops-1", "ops-2"} {
			claim := &corev1.PersistentVolumeClaim{}
			g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, claim)).To(Succeed())
			g.Expect(claim.Status.Capacity.Storage().String()).To(Equal("512Mi"))
		}
		g.Expect(pgCondition(env.postgresCluster(g, ns, "ops"), v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	t.Log("Hibernation: no pod, the claims kept; and back, with the data")
	env.patchPostgresCluster(t, ns, "ops", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Hibernate = true })
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "ops"})).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
		g.Expect(env.postgresCluster(g, ns, "ops").Status.Phase).To(Equal(v1alpha1.PostgresHibernated))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	env.patchPostgresCluster(t, ns, "ops", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Hibernate = false })
	pg := env.waitPostgresReady(t, ns, "ops", 2)
	g.Expect(pg.Status.CurrentPrimary).To(Equal("ops-1"), "the primary it had")
	g.Eventually(func(g Gomega) {
		conn, err := env.connectService(t.Context(), g, ns, "ops-rw", password)
		g.Expect(err).NotTo(HaveOccurred())
		defer conn.Close(t.Context())
		var v string
		g.Expect(conn.QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v)).To(Succeed())
		g.Expect(v).To(Equal("before"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	t.Log("Scale 2 → 1 → 2")
	env.patchPostgresCluster(t, ns, "ops", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Instances = 1 })
	env.waitPostgresReady(t, ns, "ops", 1)
	env.patchPostgresCluster(t, ns, "ops", func(pg *v1alpha1.PostgresCluster) { pg.Spec.Instances = 2 })
	env.waitPostgresReady(t, ns, "ops", 2)

	t.Log("Deleted with the default policy: the claims stay, labelled")
	g.Expect(env.Client.Delete(t.Context(), &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(t.Context(), pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "ops"})).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(env.Client.List(t.Context(), claims, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "ops"})).To(Succeed())
	g.Expect(claims.Items).To(HaveLen(2))
	for _, c := range claims.Items {
		g.Expect(c.DeletionTimestamp).To(BeNil())
	}
}

// With deletionPolicy Delete and the confirmation, deleting the cluster
// deletes its claims; an owned parameter, and one PostgreSQL does not know,
// are reported as InvalidSpec and change nothing of the running cluster.
func TestPostgresClusterDeletionAndBadInput(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "gone", 1, 0, func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.DeletionPolicy = v1alpha1.DeleteClaims
		pg.Annotations = map[string]string{v1alpha1.PostgresConfirmDeleteAnnotation: "gone"}
	})
	env.waitPostgresReady(t, ns, "gone", 1)

	env.patchPostgresCluster(t, ns, "gone", func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Parameters = map[string]string{"port": "6543", "work_mem": "8MB"}
	})
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "gone")
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresInvalidSpecReason))
		g.Expect(c.Message).To(ContainSubstring("port"))
		g.Expect(pg.Status.ReadyInstances).To(Equal("1/1"), "the instance keeps running as it was")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	// A name PostgreSQL does not know, which it would not start with: the
	// instance refuses it, keeps running, and the status names it.
	env.patchPostgresCluster(t, ns, "gone", func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Parameters = map[string]string{"shared_bufers": "64MB"}
	})
	g.Eventually(func(g Gomega) {
		pg := env.postgresCluster(g, ns, "gone")
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresInvalidSpecReason))
		g.Expect(c.Message).To(ContainSubstring("spec.parameters.shared_bufers"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.postgresCluster(g, ns, "gone").Status.ReadyInstances).To(Equal("1/1"), "the instance keeps running as it was")
	}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

	g.Expect(env.Client.Delete(t.Context(), &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		claims := &corev1.PersistentVolumeClaimList{}
		g.Expect(env.Client.List(t.Context(), claims, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "gone"})).To(Succeed())
		g.Expect(claims.Items).To(BeEmpty())
		err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gone"}, &v1alpha1.PostgresCluster{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}
