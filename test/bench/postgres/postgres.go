// Package postgres is the PostgresCluster scenario of the benchmark
// (issue 29): on a fresh local cluster whose simulation parts run real
// PostgreSQL (each instance manager a host process in a network namespace
// of its own), with the operator installed from deploy/, it measures the
// time from creating a three-instance cluster with synchronous: 1 until it
// is Ready, and, with a writer inserting a row every 50 ms through
// CLUSTER-rw's loopback address, the time from each of these to the
// writer's first successful insert on the new primary:
//
//   - failover: the primary's pod deleted with a 1 s grace period, and
//     with none and with the default 30 s;
//   - switchover: spec.primary set to a replica;
//   - cut-off: the primary's network namespace cut off (CutOffPostgres),
//     then reconnected once a replica took over.
//
// Each is tried -pg-tries times (10 by default), one after the other, the
// next once the cluster is whole again; the rows whose insert returned are
// all counted at the end (0 may be lost). It records the memory of the
// operator and of each instance manager process. It connects only to
// loopback and to the addresses of the simulation's network namespaces.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/test/bench/benchkit"
)

// Config is what the benchmark's command line asks of the scenario.
type Config struct {
	// Header is the run's description; Started is set by Run.
	Header benchkit.RunHeader
	// Repo is the repository's root, Operator the binary, LogDir where the
	// operator's logs go, Out the folder of the results.
	Repo, Operator, LogDir, Out string
	// OperatorArgs are the operator's extra flags.
	OperatorArgs []string
	// Tries is how many failovers, switchovers and cut-offs to measure.
	Tries int
	Logf  func(string, ...any)
}

const (
	namespace   = "bench-pg"
	clusterName = "db"
	instances   = 3
	// readyTimeout bounds the cluster's first start (an initdb and two
	// clones) and each recovery; tryTimeout one try.
	readyTimeout = 5 * time.Minute
	tryTimeout   = 2 * time.Minute
	// cutOffMargin is what the cut-off target adds to the lease.
	cutOffMargin = 5 * time.Second
)

// Targets of issue 29, in seconds.
const (
	failoverTarget   = 10.0
	switchoverTarget = 5.0
)

// Targets of issue 54 on the client's view (the writer's longest pause),
// in seconds; a cut-off's is the lease plus clientCutOffMargin.
const (
	clientFailoverTarget   = 3.0
	clientSwitchoverTarget = 2.0
	clientCutOffMargin     = 3 * time.Second
)

// Run measures the scenario on a fresh cluster and writes its results to
// cfg.Out; the error says what failed, after the results were written.
func Run(ctx context.Context, cfg Config) error {
	res := &Results{RunHeader: cfg.Header, Tries: cfg.Tries,
		Cluster:             ClusterSpec{Instances: instances, Synchronous: 1, Storage: "256Mi", Image: "postgres:15"},
		InstanceSampleEvery: benchkit.SampleInterval.String(),
		Writer: Writer{EveryMs: writeEvery.Milliseconds(), TimeoutMs: attemptTimeout.Milliseconds(),
			Statements: "INSERT INTO writes (id) VALUES ($1) RETURNING host(inet_server_addr())"}}
	res.Benchmark = Benchmark
	res.Notes = notes()
	return benchkit.RunScenario("postgres", &res.RunHeader, &res.Errors, cfg.Logf, func(logf func(string, ...any)) error {
		s := &scenario{cfg: cfg, res: res, logf: logf}
		return s.run(ctx)
	}, func() error { return Write(cfg.Out, res) })
}

// scenario is one run of the scenario.
type scenario struct {
	cfg  Config
	res  *Results
	logf func(string, ...any)

	c        *benchkit.Cluster
	cl       client.Client
	op       *benchkit.Operator
	w        *writer
	password string
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

func (s *scenario) run(ctx context.Context) (err error) {
	s.logf("starting a local cluster with the PostgreSQL simulation")
	s.c, err = benchkit.StartCluster(ctx, benchkit.ClusterOptions{
		Repo: s.cfg.Repo, Operator: s.cfg.Operator, LogDir: s.cfg.LogDir, Simulations: true, Scheme: scheme(), Logf: s.logf,
	})
	if err != nil {
		return err
	}
	defer func() {
		if msg := benchkit.PodsMarkedNotReady(context.WithoutCancel(ctx), s.c.Clientset, ""); msg != "" {
			s.res.ClusterHealth = append(s.res.ClusterHealth, msg)
		}
		s.logf("stopping the cluster")
		s.c.Stop()
	}()
	s.res.ClusterStartSeconds = s.c.StartSeconds
	s.cl = s.c.Client
	s.op = s.c.NewOperator(s.cfg.OperatorArgs...)
	defer func() {
		s.op.Close()
		s.res.Operator = s.op.Footprint()
	}()
	if _, err := s.op.Start(ctx); err != nil {
		return err
	}
	managers := benchkit.StartProcessSampler(benchkit.SampleInterval, s.instanceManagers)
	defer func() {
		managers.Close()
		s.res.InstanceManagers = managers.Processes()
	}()

	if err := benchkit.CreateNamespace(ctx, s.c.Clientset, namespace); err != nil {
		return err
	}
	s.res.Ready = s.createAndWaitReady(ctx)
	if !s.res.Ready.OK {
		return fmt.Errorf("the PostgresCluster did not become Ready: %s", s.res.Ready.Error)
	}
	s.logf("Ready %.2f s after its creation", s.res.Ready.Seconds)
	if lease, err := s.leaseDuration(ctx); err == nil {
		s.res.LeaseDurationSeconds = lease.Seconds()
	} else {
		s.logf("the primary's Lease: %v", err)
	}
	info, err := s.writeService(ctx)
	if err != nil {
		return err
	}
	if err := createTable(ctx, info); err != nil {
		return err
	}
	s.w = startWriter(info)
	defer func() {
		ids, failed := s.w.halt()
		s.res.Writer.Committed, s.res.Writer.Failed = len(ids), failed
		lost, err := missingRows(context.WithoutCancel(ctx), info, ids)
		if err != nil {
			s.res.Writer.LostError = err.Error()
			return
		}
		s.res.Writer.Lost = &lost
		s.logf("%d rows committed through %s-rw, %d missing; %d attempts failed", len(ids), clusterName, lost, failed)
	}()

	for _, op := range []struct {
		name   string
		series *Series
		try    func(context.Context) Try
	}{
		{"failover (pod deleted)", &s.res.Failover, s.failover(1)},
		{"failover (pod deleted, no grace)", &s.res.FailoverNoGrace, s.failover(0)},
		{"failover (pod deleted, default grace)", &s.res.FailoverDefaultGrace, s.failover(30)},
		{"switchover", &s.res.Switchover, s.switchover},
		{"failover (cut off)", &s.res.CutOff, s.cutOff},
	} {
		for k := 1; k <= s.cfg.Tries; k++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t := op.try(ctx)
			op.series.Tries = append(op.series.Tries, t)
			s.logf("%s %d/%d: %s", op.name, k, s.cfg.Tries, t)
			if t.RecoveredSeconds == nil {
				return fmt.Errorf("%s %d: the cluster was not whole again within %s, the remaining tries are not run", op.name, k, readyTimeout)
			}
		}
		op.series.summarize()
	}
	return nil
}

func (t Try) String() string {
	out := t.From + " → " + t.To
	switch {
	case t.Error != "":
		return out + ": error: " + t.Error
	case t.TimedOut:
		out += fmt.Sprintf(": no write on a new primary within %s", tryTimeout)
	case t.Seconds != nil:
		out += fmt.Sprintf(": first write on the new primary after %.2f s", *t.Seconds)
	}
	if t.PauseSeconds != nil {
		out += fmt.Sprintf(", the writer's longest pause %.2f s", *t.PauseSeconds)
	}
	if t.StatusSeconds != nil {
		out += fmt.Sprintf(", in status after %.2f s", *t.StatusSeconds)
	}
	if t.RecoveredSeconds != nil {
		out += fmt.Sprintf(", whole again after %.1f s", *t.RecoveredSeconds)
	}
	return out
}

// summarize computes the distributions of the tries that completed.
func (s *Series) summarize() {
	var secs, pauses []float64
	for _, t := range s.Tries {
		if t.Seconds != nil {
			secs = append(secs, *t.Seconds)
		}
		if t.PauseSeconds != nil {
			pauses = append(pauses, *t.PauseSeconds)
		}
	}
	s.Seconds = benchkit.Summarize(secs)
	s.Pause = benchkit.Summarize(pauses)
}

// clientView is s with each try's time its pause: the same verdicts and
// figures, from the client's side.
func (s Series) clientView() Series {
	view := Series{Seconds: s.Pause, Pause: s.Pause}
	for _, t := range s.Tries {
		t.Seconds = t.PauseSeconds
		view.Tries = append(view.Tries, t)
	}
	return view
}

// instanceManagers are the running instance managers, by pod.
func (s *scenario) instanceManagers() map[string]int {
	out := map[string]int{}
	for n := 1; n <= instances; n++ {
		pod := podName(n)
		if pid, err := s.c.Cluster.PostgresProcessPID(namespace, pod); err == nil {
			out[pod] = pid
		}
	}
	return out
}

func podName(n int) string { return clusterName + "-" + strconv.Itoa(n) }

func (s *scenario) createAndWaitReady(ctx context.Context) Timed {
	spec := s.res.Cluster
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: namespace},
		Spec: v1alpha1.PostgresClusterSpec{Instances: spec.Instances, Synchronous: spec.Synchronous, Image: spec.Image,
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse(spec.Storage)}},
	}
	start := time.Now()
	if err := s.cl.Create(ctx, pg); err != nil {
		return Timed{Error: err.Error()}
	}
	if _, err := s.waitWhole(ctx, start, readyTimeout); err != nil {
		return Timed{Seconds: benchkit.Round3(time.Since(start).Seconds()), Error: err.Error()}
	}
	return Timed{Seconds: benchkit.Round3(time.Since(start).Seconds()), OK: true}
}

func (s *scenario) get(ctx context.Context) (*v1alpha1.PostgresCluster, error) {
	pg := &v1alpha1.PostgresCluster{}
	err := s.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: clusterName}, pg)
	return pg, err
}

// Whole is a Ready cluster with every instance ready, a primary named and
// no change under way: what a measurement on the cluster waits for.
func Whole(pg *v1alpha1.PostgresCluster) bool {
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresReadyCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != pg.Generation || pg.Status.ObservedGeneration != pg.Generation {
		return false
	}
	if pg.Status.ReadyInstances != fmt.Sprintf("%d/%d", pg.Spec.Instances, pg.Spec.Instances) || pg.Status.CurrentPrimary == "" {
		return false
	}
	settled := func(name string) bool { return name == "" || name == pg.Status.CurrentPrimary }
	return settled(pg.Status.TargetPrimary) && settled(pg.Spec.Primary)
}

// waitWhole polls every 100 ms until the cluster is whole, and returns it.
func (s *scenario) waitWhole(ctx context.Context, start time.Time, limit time.Duration) (*v1alpha1.PostgresCluster, error) {
	var last *v1alpha1.PostgresCluster
	for time.Since(start) < limit {
		pg, err := s.get(ctx)
		if err == nil {
			last = pg
			if Whole(pg) {
				return pg, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if last == nil {
		return nil, fmt.Errorf("not whole within %s", limit)
	}
	return nil, fmt.Errorf("not whole within %s: phase %s, %s ready, primary %q, target %q", limit, last.Status.Phase, last.Status.ReadyInstances, last.Status.CurrentPrimary, last.Status.TargetPrimary)
}

// leaseDuration reads the primary's Lease.
func (s *scenario) leaseDuration(ctx context.Context) (time.Duration, error) {
	lease := &coordinationv1.Lease{}
	if err := s.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pgspec.LeaseName(clusterName)}, lease); err != nil {
		return 0, err
	}
	if lease.Spec.LeaseDurationSeconds == nil {
		return 0, errors.New("the Lease has no duration")
	}
	return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second, nil
}

// writeService is how the writer reaches CLUSTER-rw: the loopback address
// that the simulation gives the Service, and the application's password.
func (s *scenario) writeService(ctx context.Context) (postgres.ConnInfo, error) {
	var info postgres.ConnInfo
	secret := &corev1.Secret{}
	if err := s.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pgspec.GeneratedAppSecret(clusterName)}, secret); err != nil {
		return info, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		svc := &corev1.Service{}
		err := s.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pgspec.WriteService(clusterName)}, svc)
		if address := svc.Annotations[localcluster.SimulationAddressAnnotation]; err == nil && address != "" {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return info, err
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				return info, err
			}
			return postgres.ConnInfo{Host: host, Port: n, User: string(secret.Data["username"]), Password: string(secret.Data["password"]), DBName: string(secret.Data["dbname"])}, nil
		}
		if time.Now().After(deadline) {
			return info, fmt.Errorf("service %s-rw has no simulated address after a minute (%v)", clusterName, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createTable creates the writer's table through CLUSTER-rw, trying again
// until the Service routes: as for any client of a Service, the cluster
// may turn Ready a moment before its endpoints say so.
func createTable(ctx context.Context, info postgres.ConnInfo) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		conn, err := postgres.Connect(ctx, info)
		if err == nil {
			_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS writes (id bigint PRIMARY KEY)")
			conn.Close(context.WithoutCancel(ctx))
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create the table through %s-rw: %w", clusterName, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// prepare waits until the cluster is whole and the writer commits, and
// returns the primary and its address.
func (s *scenario) prepare(ctx context.Context) (*v1alpha1.PostgresCluster, string, error) {
	pg, err := s.waitWhole(ctx, time.Now(), readyTimeout)
	if err != nil {
		return nil, "", err
	}
	since := time.Now()
	for s.w.lastCommit().Before(since) {
		if time.Since(since) > time.Minute {
			return nil, "", errors.New("the writer committed nothing for a minute on a whole cluster")
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	addr, err := s.c.Cluster.PostgresAddress(namespace, pg.Status.CurrentPrimary)
	return pg, addr, err
}

// measure waits, from start, for the writer's first commit on a server
// that accepts, and for status.currentPrimary to change from from; then
// for the cluster to be whole again.
func (s *scenario) measure(ctx context.Context, t *Try, start time.Time, accepts func(server string) bool) {
	deadline := start.Add(tryTimeout)
	for time.Now().Before(deadline) && (t.Seconds == nil || t.StatusSeconds == nil) {
		if t.Seconds == nil {
			if c, ok := s.w.firstAfter(start, accepts); ok {
				v := benchkit.Round3(c.at.Sub(start).Seconds())
				t.Seconds = &v
				t.To = s.podOf(c.server)
				pause := benchkit.Round3(s.w.pauseAround(start, c.at).Seconds())
				t.PauseSeconds = &pause
			}
		}
		if t.StatusSeconds == nil {
			if pg, err := s.get(ctx); err == nil && pg.Status.CurrentPrimary != "" && pg.Status.CurrentPrimary != t.From {
				v := benchkit.Round3(time.Since(start).Seconds())
				t.StatusSeconds = &v
			}
		}
		select {
		case <-ctx.Done():
			t.Error = ctx.Err().Error()
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.TimedOut = t.Seconds == nil
}

// recover waits until the cluster is whole again, and records how long
// that took from start, and the operator's events since start.
func (s *scenario) recover(ctx context.Context, t *Try, start time.Time) {
	defer s.events(ctx, t, start)
	if _, err := s.waitWhole(ctx, time.Now(), readyTimeout); err != nil {
		if t.Error == "" {
			t.Error = "recovery: " + err.Error()
		}
		return
	}
	v := benchkit.Round3(time.Since(start).Seconds())
	t.RecoveredSeconds = &v
}

// transitionReasons are the operator's events that say where a failover or
// switchover's time goes.
var transitionReasons = []string{"FailoverStarted", "SwitchoverStarted", "Promoted"}

// events records, for each transition reason, the first of the operator's
// events about the cluster since start.
func (s *scenario) events(ctx context.Context, t *Try, start time.Time) {
	list, err := s.c.Clientset.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, ev := range list.Items {
		at := ev.EventTime.Time
		if at.IsZero() {
			// An event of the core API has whole seconds only.
			at = ev.CreationTimestamp.Time
		}
		if ev.Regarding.Name != clusterName || !slices.Contains(transitionReasons, ev.Reason) || at.Before(start) {
			continue
		}
		v := benchkit.Round3(at.Sub(start).Seconds())
		if t.Events == nil {
			t.Events = map[string]float64{}
		}
		if old, ok := t.Events[ev.Reason]; !ok || v < old {
			t.Events[ev.Reason] = v
		}
	}
}

// podOf names the pod whose network namespace has address, or returns the
// address.
func (s *scenario) podOf(address string) string {
	for n := 1; n <= instances; n++ {
		if a, err := s.c.Cluster.PostgresAddress(namespace, podName(n)); err == nil && a == address {
			return podName(n)
		}
	}
	return address
}

// failover deletes the primary's pod with a grace period of grace
// seconds: 0 removes it at once, 30 is the default.
func (s *scenario) failover(grace int64) func(context.Context) Try {
	return func(ctx context.Context) Try {
		pg, addr, err := s.prepare(ctx)
		if err != nil {
			return Try{Error: err.Error()}
		}
		t := Try{From: pg.Status.CurrentPrimary}
		start := time.Now()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: t.From}}
		if err := s.cl.Delete(ctx, pod, client.GracePeriodSeconds(grace)); err != nil {
			t.Error = err.Error()
			return t
		}
		s.measure(ctx, &t, start, func(server string) bool { return server != addr })
		s.recover(ctx, &t, start)
		return t
	}
}

// switchover sets spec.primary to the next instance after the primary.
func (s *scenario) switchover(ctx context.Context) Try {
	pg, _, err := s.prepare(ctx)
	if err != nil {
		return Try{Error: err.Error()}
	}
	t := Try{From: pg.Status.CurrentPrimary}
	target := nextInstance(t.From)
	targetAddr, err := s.c.Cluster.PostgresAddress(namespace, target)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Primary = target
	start := time.Now()
	if err := s.cl.Patch(ctx, pg, patch); err != nil {
		t.Error = err.Error()
		return t
	}
	s.measure(ctx, &t, start, func(server string) bool { return server == targetAddr })
	// spec.primary done with, so that a later failover is not followed
	// by a switchover back to it.
	if err := s.clearPrimary(ctx, t.Seconds != nil); err != nil && t.Error == "" {
		t.Error = "clear spec.primary: " + err.Error()
	}
	s.recover(ctx, &t, start)
	return t
}

// clearPrimary empties spec.primary once the switchover it asked for is
// done, or at once when it did not complete.
func (s *scenario) clearPrimary(ctx context.Context, done bool) error {
	if done {
		if _, err := s.waitWhole(ctx, time.Now(), readyTimeout); err != nil {
			return err
		}
	}
	pg, err := s.get(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Primary = ""
	return s.cl.Patch(ctx, pg, patch)
}

// nextInstance is the instance after current, in name order, round.
func nextInstance(current string) string {
	for n := 1; n <= instances; n++ {
		if podName(n) == current {
			return podName(n%instances + 1)
		}
	}
	return podName(1)
}

// cutOff cuts the primary's network namespace off, and reconnects it once
// a replica took over (or the try's limit passed).
func (s *scenario) cutOff(ctx context.Context) Try {
	pg, addr, err := s.prepare(ctx)
	if err != nil {
		return Try{Error: err.Error()}
	}
	t := Try{From: pg.Status.CurrentPrimary}
	start := time.Now()
	if err := s.c.Cluster.CutOffPostgres(namespace, t.From); err != nil {
		t.Error = err.Error()
		return t
	}
	s.measure(ctx, &t, start, func(server string) bool { return server != addr })
	if err := s.c.Cluster.ReconnectPostgres(namespace, t.From); err != nil && t.Error == "" {
		t.Error = "reconnect: " + err.Error()
	}
	s.recover(ctx, &t, start)
	return t
}

// Write writes results.json, results.md and the chart into dir.
func Write(dir string, res *Results) error {
	res.Checks = Checks(res)
	data, err := benchkit.JSON(res)
	if err != nil {
		return err
	}
	return benchkit.WriteFiles(dir, map[string]string{
		"results.json": data,
		"results.md":   Markdown(res),
		chartFile:      Chart(res).SVG(),
	})
}

// Rerender rewrites results.md and the chart from dir/results.json.
func Rerender(dir string) error {
	res := &Results{}
	if err := benchkit.ReadJSON(dir, res); err != nil {
		return err
	}
	return Write(dir, res)
}

// ResultsDir is where the scenario writes under the benchmark's -out.
func ResultsDir(out string) string { return filepath.Join(out, "postgres") }
