package instance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/postgrescluster/postgresclustertest"
	"example.com/platform-operator/internal/envsuite"
	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// The suite runs a real API server with the PostgresCluster controller in a
// manager, and the instance managers as goroutines of this process, each
// with a real PostgreSQL on a loopback address of its own. Nothing
// schedules the pods (there is no kubelet): the pod objects exist, and the
// managers write their reports on them, as they would in a cluster.
var suite envsuite.Suite

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, postgresclustertest.SuiteOptions()))
}

// testLease is the lease of the tests' primaries: short, so that a lapse
// shows soon.
const testLease = 6 * time.Second

// fleet is a cluster's instance managers.
type fleet struct {
	t         *testing.T
	namespace string
	cluster   string
	instances map[string]*postgres.Instance
	mu        sync.Mutex
	running   map[string]context.CancelFunc
	done      map[string]chan error
}

func newFleet(t *testing.T, namespace, cluster string, n int) *fleet {
	f := &fleet{t: t, namespace: namespace, cluster: cluster, instances: map[string]*postgres.Instance{},
		running: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", cluster, i)
		f.instances[name] = postgrestest.NewInstance(t, name)
	}
	t.Cleanup(func() {
		for name := range f.running {
			f.stop(name)
		}
	})
	return f
}

// start runs the instance manager of name until stop.
func (f *fleet) start(name string) {
	inst := f.instances[name]
	opts := instance.Options{
		PodName: name, Namespace: f.namespace, ClusterName: f.cluster, ClusterDomain: "cluster.local",
		PGData: inst.DataDir, BinDir: inst.BinDir, SocketDir: inst.SocketDir, ListenAddress: inst.ListenAddress,
		LeaseDuration: testLease, RenewInterval: time.Second, PlainTCPWithoutCertificate: true,
		Config: suite.Config, Credential: inst.Credential,
		AddressOf: func(other string) (string, int) {
			o := f.instances[other]
			return o.ListenAddress, o.Port
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := testr.NewWithOptions(f.t, testr.Options{Verbosity: 0}).WithValues("manager", name)
	go func() { done <- instance.Run(ctx, opts, log) }()
	f.mu.Lock()
	f.running[name], f.done[name] = cancel, done
	f.mu.Unlock()
}

// stop sends the manager what SIGTERM sends it: it stops PostgreSQL cleanly
// and releases the lease.
func (f *fleet) stop(name string) {
	f.mu.Lock()
	cancel, done := f.running[name], f.done[name]
	delete(f.running, name)
	f.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		f.t.Errorf("the manager of %s did not stop within a minute", name)
	}
}

// connect reaches instance name as the application's owner.
func (f *fleet) connect(ctx context.Context, name, password string) (*pgx.Conn, error) {
	inst := f.instances[name]
	return postgres.Connect(ctx, postgres.ConnInfo{Host: inst.ListenAddress, Port: inst.Port, User: "app", Password: password, DBName: "app"})
}

// primaries counts the instances that answer as a primary.
func (f *fleet) primaries() []string {
	var out []string
	for name, inst := range f.instances {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := postgres.Connect(ctx, postgres.ConnInfo{Host: inst.SocketDir, Port: inst.Port, User: "postgres", DBName: "postgres"})
		if err == nil {
			var recovery bool
			if conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery) == nil && !recovery {
				out = append(out, name)
			}
			conn.Close(ctx)
		}
		cancel()
	}
	return out
}

func getCluster(g Gomega, ns, name string) *v1alpha1.PostgresCluster {
	pg := &v1alpha1.PostgresCluster{}
	g.Expect(suite.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pg)).To(Succeed())
	return pg
}

func appPassword(g Gomega, ns, cluster string) string {
	s := &corev1.Secret{}
	g.Expect(suite.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: cluster + "-app"}, s)).To(Succeed())
	return string(s.Data["password"])
}

// writer inserts a row every 50 ms into the cluster's current primary and
// remembers every row whose commit returned.
type writer struct {
	committed atomic.Int64
	mu        sync.Mutex
	ids       []int64
	stop      chan struct{}
	done      chan struct{}
}

func startWriter(f *fleet, password string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		for id := int64(1); ; id++ {
			select {
			case <-w.stop:
				if conn != nil {
					conn.Close(context.Background())
				}
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if conn == nil {
				pg := &v1alpha1.PostgresCluster{}
				if suite.Client.Get(ctx, types.NamespacedName{Namespace: f.namespace, Name: f.cluster}, pg) == nil && pg.Status.CurrentPrimary != "" {
					conn, _ = f.connect(ctx, pg.Status.CurrentPrimary, password)
				}
			}
			if conn != nil {
				if _, err := conn.Exec(ctx, "INSERT INTO rows (id) VALUES ($1)", id); err != nil {
					conn.Close(ctx)
					conn = nil
				} else {
					w.mu.Lock()
					w.ids = append(w.ids, id)
					w.mu.Unlock()
					w.committed.Add(1)
				}
			}
			cancel()
		}
	}()
	return w
}

func (w *writer) halt() []int64 {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.ids...)
}

// watchPrimaries samples the instances every 100 ms and reports any moment
// when two of them answered as primary.
func watchPrimaries(f *fleet) (stop func() []string) {
	var seen []string
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if p := f.primaries(); len(p) > 1 {
				seen = append(seen, fmt.Sprintf("%s at %s", p, time.Now().Format(time.StampMilli)))
			}
		}
	}()
	return func() []string { close(quit); <-done; return seen }
}

func condition(pg *v1alpha1.PostgresCluster, t string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(pg.Status.Conditions, t); c != nil && c.ObservedGeneration == pg.Generation {
		return c.Status
	}
	return metav1.ConditionUnknown
}

// A cluster of three real PostgreSQL instances, run by the instance
// managers against the operator's decisions: it starts, streams, fails over
// when its primary's pod goes (no committed row lost, with a synchronous
// standby), takes the former primary back as a replica, switches over on
// request, applies a password changed in its Secret, and fences an
// instance on request. No two instances ever answer as primary.
func TestClusterLifecycle(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := "lifecycle"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 3, Synchronous: 1, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	f := newFleet(t, ns, "db", 3)
	for _, name := range []string{"db-1", "db-2", "db-3"} {
		f.start(name)
	}
	stopWatch := watchPrimaries(f)

	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal("db-1"))
		g.Expect(condition(pg, v1alpha1.PostgresReadyCondition)).To(Equal(metav1.ConditionTrue), "%+v", pg.Status.Conditions)
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

	password := appPassword(g, ns, "db")
	conn, err := f.connect(ctx, "db-1", password)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.Exec(ctx, "CREATE TABLE rows (id bigint PRIMARY KEY)")
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close(ctx)

	w := startWriter(f, password)
	g.Eventually(w.committed.Load).WithTimeout(time.Minute).Should(BeNumerically(">=", 20))

	t.Log("Failover: the primary's pod goes (its manager stops PostgreSQL and releases the lease)")
	before := w.committed.Load()
	stopped := time.Now()
	f.stop("db-1")
	stoppedPod := &corev1.Pod{}
	g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-1"}, stoppedPod)).To(Succeed())
	handover := &v1alpha1.PostgresInstanceReport{}
	g.Expect(json.Unmarshal([]byte(stoppedPod.Annotations[v1alpha1.PostgresReportAnnotation]), handover)).To(Succeed())
	g.Expect(handover.ShutdownLSN).NotTo(BeEmpty(), "the stopped primary reported where its clean shutdown ended, before it let the lease go")
	var promoted string
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).NotTo(Equal("db-1"))
		g.Expect(pg.Status.CurrentPrimary).NotTo(BeEmpty())
		promoted = pg.Status.CurrentPrimary
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Eventually(w.committed.Load).WithTimeout(time.Minute).Should(BeNumerically(">", before+5))
	t.Logf("%s promoted; writes resumed %s after the primary stopped", promoted, time.Since(stopped).Round(100*time.Millisecond))

	t.Log("The former primary comes back as a replica of the new one")
	f.start("db-1")
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal(promoted))
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
		for _, i := range pg.Status.Instances {
			if i.Name == "db-1" {
				g.Expect(i.Role).To(Equal(v1alpha1.PostgresReplicaRole))
				g.Expect(i.Ready).To(BeTrue())
			}
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

	t.Log("Switchover back to db-1 on request")
	pg = getCluster(g, ns, "db")
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Primary = "db-1"
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ns, "db")
		g.Expect(pg.Status.CurrentPrimary).To(Equal("db-1"))
		g.Expect(pg.Status.ReadyInstances).To(Equal("3/3"))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	before = w.committed.Load()
	g.Eventually(w.committed.Load).WithTimeout(time.Minute).Should(BeNumerically(">", before+5))

	ids := w.halt()
	conn, err = f.connect(ctx, "db-1", password)
	g.Expect(err).NotTo(HaveOccurred())
	var missing int64
	for _, id := range ids {
		var found bool
		g.Expect(conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM rows WHERE id = $1)", id).Scan(&found)).To(Succeed())
		if !found {
			missing++
		}
	}
	conn.Close(ctx)
	g.Expect(missing).To(BeZero(), "committed rows lost, of %d", len(ids))
	t.Logf("%d committed rows, none lost", len(ids))

	t.Log("A password changed in its Secret is set in the database")
	secret := &corev1.Secret{}
	g.Expect(suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-app"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("a-new-password")
	g.Expect(suite.Client.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, ns, "db").Status.Credentials.AppliedVersion).To(Equal(secret.ResourceVersion))
		conn, err := f.connect(ctx, "db-1", "a-new-password")
		g.Expect(err).NotTo(HaveOccurred())
		conn.Close(ctx)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	_, err = f.connect(ctx, "db-1", password)
	g.Expect(err).To(HaveOccurred(), "the former password is refused")

	t.Log("Fencing a replica stops its PostgreSQL and keeps its data")
	fenced := "db-2"
	pg = getCluster(g, ns, "db")
	patch = client.MergeFrom(pg.DeepCopy())
	pg.Spec.FencedInstances = []string{fenced}
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ns, "db")
		g.Expect(condition(pg, v1alpha1.PostgresReplicasReadyCondition)).To(Equal(metav1.ConditionFalse))
		for _, i := range pg.Status.Instances {
			if i.Name == fenced {
				g.Expect(i.Fenced).To(BeTrue())
			}
		}
		_, err := f.connect(ctx, fenced, "a-new-password")
		g.Expect(err).To(HaveOccurred(), "a fenced instance accepts no connection")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	pg = getCluster(g, ns, "db")
	patch = client.MergeFrom(pg.DeepCopy())
	pg.Spec.FencedInstances = nil
	g.Expect(suite.Client.Patch(ctx, pg, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, ns, "db").Status.ReadyInstances).To(Equal("3/3"))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

	g.Expect(stopWatch()).To(BeEmpty(), "moments with two primaries")
}
