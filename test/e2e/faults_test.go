package e2e

import (
	"flag"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/test/e2e/faults"
)

// The flags of TestPostgresFaultInjection; the defaults are the short run
// of make test, make faults sets them for a long one.
var (
	faultSeed   = flag.Uint64("faults.seed", 0, "seed of the fault schedule; 0 draws one, printed at the start")
	faultCount  = flag.Int("faults.count", 13, "number of faults to inject")
	faultKinds  = flag.String("faults.kinds", "default", "comma-separated fault kinds; default, all, or names of test/e2e/faults")
	faultBudget = flag.Duration("faults.budget", 5*time.Minute+30*time.Second, "no fault is injected once this long has passed since the test began")
	faultOut    = flag.String("faults.out", "", "file to write the run's summary to, as JSON")
	faultKeep   = flag.String("faults.keep", "", "folder to keep the cluster's state and logs in (the operator's, each pod's), for a look after the run")
)

// A Jepsen-style run (issue 49): a PostgresCluster of three instances
// with one synchronous standby, a writer committing through CLUSTER-rw
// that records every commit that returned, and a nemesis injecting faults
// from a schedule drawn from a seed printed at the start, so that a run
// can be replayed. After every fault (healed, when it holds) the cluster
// must be back within recoveryBound, and every commit acknowledged so far
// must be on its primary; throughout, no two instances may accept writes
// at once (sampled every 100 ms). It ends with a summary: faults by kind,
// commits acknowledged and lost, time to recover. On a cluster of its own,
// of three nodes, so that stopping the API server or the operator touches
// no other test.
func TestPostgresFaultInjection(t *testing.T) {
	kinds, err := faults.ParseKinds(*faultKinds)
	if err != nil {
		t.Fatal(err)
	}
	seed := *faultSeed
	if seed == 0 {
		// Short enough to type again.
		seed = rand.Uint64N(1_000_000_000) + 1
	}
	schedule, err := faults.Schedule(seed, *faultCount, kinds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fault injection: seed %d; replay with -faults.seed=%d -faults.count=%d -faults.kinds=%s",
		seed, seed, *faultCount, joinKinds(kinds))

	started := time.Now()
	run := faults.Run{Seed: seed, Kinds: kinds, Planned: len(schedule), RecoveryBound: recoveryBound}
	defer func() {
		run.Wall = time.Since(started)
		reportFaultRun(t, faults.Summarize(run))
	}()

	g := NewWithT(t)
	env := startOwnEnvironment(t, devenv.EnvironmentOptions{
		OperatorArgs: drainOperatorArgs,
		Cluster:      localcluster.Options{Simulations: true, Nodes: 3, Logf: t.Logf, Dir: *faultKeep},
	})
	ns := env.newNamespace(t, nil)
	const cluster, instances = "db", 3
	env.newPostgresCluster(t, ns, cluster, instances, 1, nil)
	env.waitPostgresReady(t, ns, cluster, instances)
	password := env.appSecret(g, ns, cluster)["password"]
	env.createWritesTable(t, ns, cluster, password)
	w := env.startWriter(t, ns, cluster, password)
	w.resumes(g, 20, time.Minute)
	stopWatch := env.watchPrimaries(t, ns, cluster, instances)
	t.Cleanup(func() { stopWatch() })
	n := newNemesis(t, env, ns, cluster, instances, w)
	back := recovery{env: env, ns: ns, cluster: cluster, instances: instances, writer: w, keepOperator: n.keepOperatorRunning}
	t.Logf("the cluster is up and the writer commits, %s after the start", time.Since(started).Round(time.Second))

	for _, f := range schedule {
		if time.Since(started) > *faultBudget {
			t.Logf("the run's budget of %s is spent: %d faults not injected", *faultBudget, len(schedule)-len(run.Records))
			break
		}
		rec := faults.Record{Index: f.Index, Kind: f.Kind}
		detail, ended, err := n.inject(t.Context(), f)
		rec.Detail = detail
		if err != nil {
			rec.Error = err.Error()
		}
		recovery, ok := back.await(ended, recoveryBound)
		rec.Recovery, rec.Recovered = faults.Seconds(recovery), ok
		if ok {
			rec.PrimaryAfter = env.postgresCluster(g, ns, cluster).Status.CurrentPrimary
			ids := w.acknowledged()
			rec.LostAfter = env.missingRows(t, ns, cluster, password, ids)
			run.Acknowledged, run.Lost = len(ids), rec.LostAfter
		}
		// The sampling goes on across faults: the next one's starts
		// before this one's stops.
		next := env.watchPrimaries(t, ns, cluster, instances)
		rec.TwoPrimaries = stopWatch()
		stopWatch = next
		run.Records = append(run.Records, rec)
		t.Logf("%s: %s; back after %s (%t), %s the primary; acknowledged %d, lost %d, two primaries %d; %s",
			f, detail, rec.Recovery, ok, rec.PrimaryAfter, run.Acknowledged, rec.LostAfter, len(rec.TwoPrimaries), rec.Error)
		if !ok {
			env.logPostgresState(t, ns, cluster, 40)
			break // the cluster is not back: later faults would tell nothing
		}
	}

	ids := w.halt()
	run.Acknowledged = len(ids)
	run.Lost = env.missingRows(t, ns, cluster, password, ids)
	run.TwoPrimaries = stopWatch()
}

// reportFaultRun logs the summary, writes it where -faults.out says, and
// fails the test if the run failed.
func reportFaultRun(t *testing.T, s faults.Summary) {
	for _, line := range s.Lines() {
		t.Log(line)
	}
	if *faultOut != "" {
		if err := s.WriteJSON(*faultOut); err != nil {
			t.Error(err)
		} else {
			t.Logf("summary written to %s", *faultOut)
		}
	}
	if len(s.Failures) > 0 {
		t.Errorf("the fault-injection run failed (replay with -faults.seed=%d):\n%s", s.Seed, strings.Join(s.Failures, "\n"))
	}
}

func joinKinds(kinds []faults.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ",")
}
