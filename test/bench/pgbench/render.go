package pgbench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// Markdown renders results.md.
func Markdown(res *Results) string {
	w := &benchkit.MarkdownWriter{}
	w.Header("PostgreSQL throughput: PostgresCluster next to PostgreSQL set up by hand", "`test/bench` (`-scenarios pgbench`, issue 54)", res.RunHeader)
	p := res.Pgbench
	w.P("- PostgreSQL %s on both sides (the same binaries); pgbench -i -s %d once per side; each run `-c %d -j %d -T %d` (workloads: %s), %d rounds at each synchronous setting (%v)\n",
		orDash(res.PostgreSQL), p.Scale, p.Clients, p.Threads, p.DurationSeconds, strings.Join(p.Workloads, ", "), p.Rounds, p.Synchronous)
	w.P("- Ours: a PostgresCluster of %d instances, storage %s, image %s; %s\n", res.Ours.Instances, res.Ours.Storage, res.Ours.Image, res.Ours.SynchronousChange)
	if len(res.Ours.Parameters) > 0 {
		names := slices.Sorted(maps.Keys(res.Ours.Parameters))
		for i, name := range names {
			names[i] = name + " = " + res.Ours.Parameters[name]
		}
		w.P("- Ours' spec.parameters (-pgbench-parameters): %s\n", strings.Join(names, ", "))
	}
	w.P("- By hand: initdb `%s`; postgresql.conf: %s; standbys: %s\n", strings.Join(res.ByHand.InitDBFlags, " "), strings.Join(res.ByHand.Configuration, "; "), res.ByHand.Standbys)
	w.P("- What matches: %s\n\n", orDash(res.ByHand.InitDBMatchesOurs))
	w.Targets(res.Checks, false)

	w.P("## Ratios\n\nEach round's runs divided by the same round's: TPS and p99 latency. The targets are judged on ours at the primary's address ÷ by hand; through the Service, ours goes through the simulation's loopback proxy (in this program), and Service ÷ direct is that proxy's cost alone.\n\n")
	w.P("| Workload | synchronous | Ratio | TPS per round | TPS median | p99 per round | p99 median |\n|---|---:|---|---|---:|---|---:|\n")
	for _, c := range res.Comparisons {
		w.P("| %s | %d | %s ÷ %s | %s | %s | %s | %s |\n", c.Workload, c.Synchronous, c.Subject, c.Reference,
			joinRatios(c.TPSRatios), optional(c.MedianTPSRatio), joinRatios(c.P99Ratios), optional(c.MedianP99Ratio))
	}
	w.P("\n")

	w.P("## Runs\n\nIn the order they ran. TPS is pgbench's (without initial connection time); latencies are from its per-transaction logs (nearest rank). CPU seconds used during the run.\n\n")
	cpuNames := []string{cpuPgbench, cpuProgram, cpuOperator, cpuManagers, cpuMachine}
	w.P("| Round | sync | Workload | System | Path | TPS | Transactions | mean (ms) (pgbench's) | p50 (ms) | p99 (ms) | max (ms) | failed | CPU s: %s | Error |\n", strings.Join(cpuNames, " / "))
	w.P("|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range res.Runs {
		cpu := make([]string, len(cpuNames))
		for i, n := range cpuNames {
			if v, ok := r.CPUSeconds[n]; ok {
				cpu[i] = benchkit.TrimFloat(v)
			} else {
				cpu[i] = "—"
			}
		}
		l := r.Latency
		w.P("| %d | %d | %s | %s | %s | %.1f | %d | %.3f (%.3f) | %.3f | %.3f | %.3f | %d | %s | %s |\n", r.Round, r.Synchronous, r.Workload, r.System, r.Path,
			r.TPS, l.Transactions, l.MeanMs, r.ReportedMeanMs, l.P50Ms, l.P99Ms, l.MaxMs, r.Failed, strings.Join(cpu, " / "), r.Error)
	}
	w.P("\n")

	w.P("## pgbench -i\n\n| System | Seconds | Error |\n|---|---:|---|\n")
	for _, i := range res.Init {
		w.P("| %s | %.1f | %s |\n", i.System, i.Seconds, i.Error)
	}
	w.P("\n")

	w.P("## Settings that differ\n\nSHOW ALL on each primary as the application's role (parameters reserved to superusers are hidden from both), after pgbench -i, with synchronous: 1.\n\n")
	if res.Settings.Error != "" {
		w.P("Not compared: %s\n\n", res.Settings.Error)
	} else {
		settingsTable(w, res.Settings.Differ)
		if len(res.Settings.Placement) > 0 {
			names := make([]string, len(res.Settings.Placement))
			for i, d := range res.Settings.Placement {
				names[i] = d.Name
			}
			w.P("Also different, as on any two servers of one machine (where they live, listen and what they are called): %s.\n\n", strings.Join(names, ", "))
		}
	}
	var problems []string
	for _, h := range res.ClusterHealth {
		problems = append(problems, "cluster health: "+h)
	}
	problems = append(problems, res.Errors...)
	w.List("Errors and cluster health", problems)
	w.List("Method", res.Notes)
	return w.String()
}

func settingsTable(w *benchkit.MarkdownWriter, diffs []SettingDiff) {
	if len(diffs) == 0 {
		w.P("None.\n\n")
		return
	}
	w.P("| Parameter | Ours | By hand |\n|---|---|---|\n")
	for _, d := range diffs {
		w.P("| %s | `%s` | `%s` |\n", d.Name, d.Ours, d.ByHand)
	}
	w.P("\n")
}

func joinRatios(rs []*float64) string {
	each := make([]string, len(rs))
	for i, r := range rs {
		each[i] = optional(r)
	}
	return strings.Join(each, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// notes say how the figures were made.
func notes(p PgbenchSettings) []string {
	return []string{
		"The local cluster is fresh (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) with its simulation parts: each PostgresCluster pod's instance manager runs as a host process in a network namespace of its own with real PostgreSQL 15, and each Service of the cluster gets a TCP proxy on a loopback address, run by this program. The hand-made servers run on the same machine at the same time, with the cluster up, so that both sides share the machine's background load. This program connects only to loopback and to the pods' namespace addresses, never to a pod or Service cluster IP.",
		fmt.Sprintf("Rounds: at each synchronous setting, %d rounds; in each, for each workload, ours runs (at the primary's address and through the -rw Service, which of them first alternating between rounds), then the hand-made primary: ours and by hand alternate, so that drift in the machine's load touches both. Every run has its own pgbench process; pgbench vacuums pgbench_branches and pgbench_tellers and empties pgbench_history before each run (its default).", p.Rounds),
		"pgbench connects as the application's role with its password (the PostgresCluster's from the operator's Secret, the hand-made one's made with CREATE ROLE … LOGIN PASSWORD), sslmode=require on both sides, over TLS 1.3 (the PostgresCluster's certificates, a self-signed one by hand; the standbys stream over TLS on both); SCRAM authentication happens at connection time, which pgbench's TPS leaves out.",
		"TPS is the line 'tps = … (without initial connection time)' of pgbench's report. Latencies come from pgbench's per-transaction logs (--log --log-prefix, one file per thread): the third field of each line (time, the transaction's elapsed time in µs); the field time_us is the microseconds part of the transaction's timestamp, not a latency. Lines marked failed or skipped are counted, not timed. Percentiles are nearest-rank.",
		"Ratios are ours ÷ by hand for each round, with the median over the rounds; the targets (TPS ≥ 0.95×, p99 ≤ 1.05×) are judged on the medians at the primary's address, which is how an application in the pod network reaches it. Through the Service, every byte also passes through the simulation's proxy, which no real cluster has: those ratios are reported, not judged.",
		"CPU seconds per run are read from /proc: pgbench's own (from its exit status), this program's (which runs the Service proxies and the local cluster's simulation), the operator's, the instance managers' (their own process, not PostgreSQL's, which are its children), and the whole machine's busy time.",
		"Ours: the operator's settings (internal/instance/postgres RenderConfig) plus the cluster's defaults; by hand: PostgreSQL's defaults plus what the setup lists. The parameters whose values differ are listed as SHOW ALL shows them.",
	}
}
