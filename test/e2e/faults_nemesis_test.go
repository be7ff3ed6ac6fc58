package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/test/e2e/faults"
)

// nemesis injects the faults of a schedule into one PostgresCluster of
// three instances, on a cluster of the test's own, and heals those that
// hold. What it has not healed when the test ends, by a failure in
// between, is healed then: no process stays stopped, no pod cut off, no
// control plane down.
type nemesis struct {
	t           *testing.T
	env         *environment
	ns, cluster string
	instances   int
	writer      *pgWriter

	mu      sync.Mutex
	pending map[int]func() error
	nextID  int
}

func newNemesis(t *testing.T, env *environment, ns, cluster string, instances int, w *pgWriter) *nemesis {
	n := &nemesis{t: t, env: env, ns: ns, cluster: cluster, instances: instances, writer: w, pending: map[int]func() error{}}
	t.Cleanup(n.healAll)
	return n
}

// hold registers heal, to be run at the end of the test unless the
// returned function runs it first; that one runs it at most once.
func (n *nemesis) hold(heal func() error) (healNow func() error) {
	n.mu.Lock()
	id := n.nextID
	n.nextID++
	n.pending[id] = heal
	n.mu.Unlock()
	return func() error {
		n.mu.Lock()
		h, ok := n.pending[id]
		delete(n.pending, id)
		n.mu.Unlock()
		if !ok {
			return nil
		}
		return h()
	}
}

func (n *nemesis) healAll() {
	n.mu.Lock()
	heals := n.pending
	n.pending = map[int]func() error{}
	n.mu.Unlock()
	for _, heal := range heals {
		if err := heal(); err != nil {
			n.t.Logf("heal at the end of the test: %v", err)
		}
	}
}

// inject injects f, waits out its hold and heals it. It says what it did,
// and when the fault ended: when it was healed, or injected if nothing
// heals it.
func (n *nemesis) inject(ctx context.Context, f faults.Fault) (detail string, ended time.Time, err error) {
	primary, standbys, err := n.roles(ctx)
	if err != nil {
		return "", time.Now(), err
	}
	target := primary
	if f.Target == faults.Standby {
		target = standbys[f.Pick%len(standbys)]
	}
	other := standbys[(f.Pick+1)%len(standbys)]
	c := n.env.Cluster
	switch f.Kind {
	case faults.DeletePrimary, faults.DeleteStandby:
		return fmt.Sprintf("deleted %s (grace %ds)", target, f.GraceSeconds), time.Now(), n.deletePods(ctx, f.GraceSeconds, target)
	case faults.DeletePrimaryAndStandby:
		return fmt.Sprintf("deleted %s and %s (grace %ds)", primary, target, f.GraceSeconds), time.Now(), n.deletePods(ctx, f.GraceSeconds, primary, target)
	case faults.DeletePrimaryAndSyncStandby:
		return n.loseSynchronousPair(ctx, f, primary, target, other)
	case faults.KillPostgres:
		return "killed PostgreSQL in " + target, time.Now(), untilDone(ctx, func() error { return c.KillPostgres(n.ns, target) })
	case faults.KillManager:
		err := untilDone(ctx, func() error {
			pid, err := c.PostgresProcessPID(n.ns, target)
			if err != nil {
				return err
			}
			return syscall.Kill(pid, syscall.SIGKILL)
		})
		return "killed the instance manager of " + target, time.Now(), err
	case faults.PausePostgres:
		return n.holdFor(f, "paused PostgreSQL in "+target, func() error { return c.PausePostgres(n.ns, target) },
			func() error { return c.ResumePostgres(n.ns, target) })
	case faults.PauseManager:
		return n.holdFor(f, "paused the instance manager of "+target, func() error { return c.PauseInstanceManager(n.ns, target) },
			func() error { return c.ResumeInstanceManager(n.ns, target) })
	case faults.CutNetwork:
		return n.holdFor(f, "cut "+target+" off the network", func() error { return c.CutOffPostgres(n.ns, target) },
			func() error { return c.ReconnectPostgres(n.ns, target) })
	case faults.CutAPIServer:
		return n.holdFor(f, "cut "+target+" off the API server", func() error { return c.CutOffPostgresFromAPIServer(n.ns, target) },
			func() error { return c.ReconnectPostgresToAPIServer(n.ns, target) })
	case faults.RestartOperator:
		return n.restartOperatorMidFailover(ctx, f, primary)
	case faults.StopAPIServer:
		return n.stopAPIServer(ctx, f, "")
	case faults.StopAPIServerMidFailover:
		return n.stopAPIServer(ctx, f, primary)
	}
	return "", time.Now(), fmt.Errorf("no injection for fault kind %q", f.Kind)
}

// roles reads which instance is the primary now, and the others.
func (n *nemesis) roles(ctx context.Context) (primary string, standbys []string, err error) {
	pg := &v1alpha1.PostgresCluster{}
	if err := n.env.Client.Get(ctx, client.ObjectKey{Namespace: n.ns, Name: n.cluster}, pg); err != nil {
		return "", nil, fmt.Errorf("read the roles: %w", err)
	}
	primary = pg.Status.CurrentPrimary
	for i := 1; i <= n.instances; i++ {
		if name := fmt.Sprintf("%s-%d", n.cluster, i); name != primary {
			standbys = append(standbys, name)
		}
	}
	if primary == "" || len(standbys) != n.instances-1 {
		return "", nil, fmt.Errorf("no primary among %d instances: %+v", n.instances, pg.Status)
	}
	return primary, standbys, nil
}

// holdFor injects a fault, keeps it for its hold and heals it.
func (n *nemesis) holdFor(f faults.Fault, detail string, inject, heal func() error) (string, time.Time, error) {
	if err := inject(); err != nil {
		return detail, time.Now(), fmt.Errorf("%s: %w", detail, err)
	}
	healNow := n.hold(heal)
	time.Sleep(f.Hold)
	err := healNow()
	if err != nil {
		err = fmt.Errorf("heal after %s: %w", detail, err)
	}
	return fmt.Sprintf("%s for %s", detail, f.Hold), time.Now(), err
}

// loseSynchronousPair makes the one instance that a failover could
// promote lack acknowledged commits: cut off the network, the standby
// isolated receives nothing while the other standby alone acknowledges
// the writer's commits; then the primary and that other standby are
// deleted together, and the isolated one is reconnected once their
// processes are gone, as after a zone lost while a link was down. A cut
// rather than a pause: a stopped process's socket still receives the WAL
// the primary sends, and it catches up once continued; and the
// reconnection waits for the deleted processes, or a primary in its
// shutdown sends the isolated one what it lacks.
func (n *nemesis) loseSynchronousPair(ctx context.Context, f faults.Fault, primary, isolated, acknowledging string) (string, time.Time, error) {
	c := n.env.Cluster
	detail := fmt.Sprintf("cut %s off; commits acknowledged by %s alone; deleted %s and %s (grace %ds); reconnected %s once they were gone",
		isolated, acknowledging, primary, acknowledging, f.GraceSeconds, isolated)
	deleted, err := n.running(ctx, primary, acknowledging)
	if err != nil {
		return detail, time.Now(), err
	}
	if err := c.CutOffPostgres(n.ns, isolated); err != nil {
		return detail, time.Now(), fmt.Errorf("cut %s off: %w", isolated, err)
	}
	reconnect := n.hold(func() error { return c.ReconnectPostgres(n.ns, isolated) })
	// Commits that the isolated standby never received.
	before := n.writer.committed.Load()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline) && n.writer.committed.Load() < before+20; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	committed := n.writer.committed.Load() - before
	err = n.deletePods(ctx, f.GraceSeconds, primary, acknowledging)
	if err == nil {
		err = n.awaitGone(ctx, deleted)
	}
	err = errors.Join(err, reconnect())
	return fmt.Sprintf("%s (%d commits while %s was cut off)", detail, committed, isolated), time.Now(), err
}

// podRun is one run of a pod: its UID and its instance manager's process.
type podRun struct {
	name string
	uid  types.UID
	pid  int
}

// running says which runs of the named pods are running now.
func (n *nemesis) running(ctx context.Context, names ...string) ([]podRun, error) {
	var runs []podRun
	for _, name := range names {
		pod := &corev1.Pod{}
		if err := n.env.Client.Get(ctx, client.ObjectKey{Namespace: n.ns, Name: name}, pod); err != nil {
			return nil, fmt.Errorf("read pod %s: %w", name, err)
		}
		pid, err := n.env.Cluster.PostgresProcessPID(n.ns, name)
		if err != nil {
			return nil, err
		}
		runs = append(runs, podRun{name: name, uid: pod.UID, pid: pid})
	}
	return runs, nil
}

// awaitGone waits, for at most 30 s, until the runs have ended: their
// instance managers' processes exited and their pods deleted for good.
func (n *nemesis) awaitGone(ctx context.Context, runs []podRun) error {
	gone := func(r podRun) bool {
		if syscall.Kill(r.pid, 0) == nil {
			return false
		}
		pod := &corev1.Pod{}
		err := n.env.Client.Get(ctx, client.ObjectKey{Namespace: n.ns, Name: r.name}, pod)
		return apierrors.IsNotFound(err) || (err == nil && pod.UID != r.uid)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		if !slices.ContainsFunc(runs, func(r podRun) bool { return !gone(r) }) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the deleted pods' processes did not end within 30 s")
}

// restartOperatorMidFailover deletes the primary's pod, kills the operator
// once the failover has begun, and starts it again, as its Deployment
// would.
func (n *nemesis) restartOperatorMidFailover(ctx context.Context, f faults.Fault, primary string) (string, time.Time, error) {
	if err := n.deletePods(ctx, f.GraceSeconds, primary); err != nil {
		return "", time.Now(), err
	}
	began := n.awaitFailover(ctx)
	n.env.operator().Kill()
	detail := fmt.Sprintf("deleted %s (grace %ds), killed the operator %s", primary, f.GraceSeconds, began)
	start, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := n.env.StartOperator(start, drainOperatorArgs...); err != nil {
		return detail, time.Now(), fmt.Errorf("start the operator again: %w", err)
	}
	return detail + ", started it again", time.Now(), nil
}

// stopAPIServer stops kube-apiserver for the fault's hold, once the
// failover of primary has begun if primary is set; then starts it again,
// and the operator too if it exited meanwhile, as it does once it cannot
// renew its own lease.
func (n *nemesis) stopAPIServer(ctx context.Context, f faults.Fault, primary string) (string, time.Time, error) {
	detail := fmt.Sprintf("stopped kube-apiserver for %s", f.Hold)
	if primary != "" {
		if err := n.deletePods(ctx, f.GraceSeconds, primary); err != nil {
			return "", time.Now(), err
		}
		detail = fmt.Sprintf("deleted %s (grace %ds), %s %s", primary, f.GraceSeconds, detail, n.awaitFailover(ctx))
	}
	c := n.env.Cluster
	if err := c.StopComponent(localcluster.APIServer); err != nil {
		return detail, time.Now(), fmt.Errorf("stop kube-apiserver: %w", err)
	}
	start := n.hold(func() error { return c.StartComponent(localcluster.APIServer) })
	time.Sleep(f.Hold)
	if err := start(); err != nil {
		return detail, time.Now(), fmt.Errorf("start kube-apiserver again: %w", err)
	}
	ended := time.Now()
	answers := untilDone(ctx, func() error {
		return n.env.Client.Get(ctx, client.ObjectKey{Name: n.ns}, &corev1.Namespace{})
	})
	if answers != nil {
		return detail, ended, fmt.Errorf("kube-apiserver does not answer again: %w", answers)
	}
	// After kube-apiserver restarted, the local cluster's kube-scheduler
	// binds no new pod and its kube-controller-manager updates no
	// EndpointSlice (docs/fault-injection.md, Findings): their informers
	// stay behind. In a real cluster both would have lost their leader
	// lease in such an outage and been restarted by the kubelet; here the
	// run restarts them.
	if err := c.RestartControllers(); err != nil {
		return detail, ended, err
	}
	detail += "; kube-scheduler and kube-controller-manager restarted"
	if restarted, err := n.keepOperatorRunning(ctx); restarted || err != nil {
		detail += "; the operator exited and was started again"
		return detail, ended, err
	}
	return detail, ended, nil
}

// keepOperatorRunning starts the operator again if it exited by itself,
// as its Deployment would, and says whether it did.
func (n *nemesis) keepOperatorRunning(ctx context.Context) (bool, error) {
	if exited, _ := n.env.operator().Exited(); !exited {
		return false, nil
	}
	start, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := n.env.StartOperator(start, drainOperatorArgs...); err != nil {
		return true, fmt.Errorf("start the operator again: %w", err)
	}
	return true, nil
}

// awaitFailover waits, for at most 30 s, until the operator says that a
// failover has begun, and says whether it saw it.
func (n *nemesis) awaitFailover(ctx context.Context) string {
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 1500 && time.Now().Before(deadline); i++ {
		pg := &v1alpha1.PostgresCluster{}
		if n.env.Client.Get(ctx, client.ObjectKey{Namespace: n.ns, Name: n.cluster}, pg) == nil && pg.Status.Phase == v1alpha1.PostgresFailingOver {
			return "mid-failover"
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "(no failover seen within 30 s)"
}

// deletePods deletes the named pods of the cluster, one right after the
// other.
func (n *nemesis) deletePods(ctx context.Context, grace int64, names ...string) error {
	var errs []error
	for _, name := range slices.Compact(names) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: name}}
		if err := n.env.Client.Delete(ctx, pod, client.GracePeriodSeconds(grace)); err != nil {
			errs = append(errs, fmt.Errorf("delete pod %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// untilDone calls f until it succeeds, for at most 10 s: a process to signal
// may be between two runs.
func untilDone(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for i := 0; i < 40; i++ {
		if err = f(); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}
