package postgres

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// chartFile is the chart of every try's time against its target.
const chartFile = "failover.svg"

// Checks judges the targets of issue 29 from the results.
func Checks(res *Results) []benchkit.Check {
	checks := []benchkit.Check{{Scenario: "ready", Target: fmt.Sprintf("%d instances, synchronous: %d: created → Ready (no target)", res.Cluster.Instances, res.Cluster.Synchronous),
		Figure: timedFigure(res.Ready), Met: "n/a (no target)"}}
	checks = append(checks,
		seriesCheck("failover", fmt.Sprintf("primary's pod deleted (1 s grace) → first write on the new primary through %s-rw: p99 ≤ %g s", clusterName, failoverTarget), res.Failover, res.Tries, failoverTarget),
		seriesCheck("switchover", fmt.Sprintf("spec.primary → first write on the new primary: p99 ≤ %g s", switchoverTarget), res.Switchover, res.Tries, switchoverTarget),
	)
	if res.LeaseDurationSeconds > 0 {
		bound := res.LeaseDurationSeconds + cutOffMargin.Seconds()
		checks = append(checks, seriesCheck("cut-off", fmt.Sprintf("primary cut off → first write on the new primary: p99 ≤ the lease's %g s + %g s = %g s", res.LeaseDurationSeconds, cutOffMargin.Seconds(), bound), res.CutOff, res.Tries, bound))
	} else {
		checks = append(checks, benchkit.Check{Scenario: "cut-off", Target: fmt.Sprintf("primary cut off → first write on the new primary: p99 ≤ the lease's duration + %g s", cutOffMargin.Seconds()),
			Figure: seriesFigure(res.CutOff), Met: benchkit.NotJudged("the lease's duration was not read")})
	}
	checks = append(checks, clientChecks(res)...)
	checks = append(checks, lostCheck(res))
	checks = append(checks, benchkit.Check{Scenario: "memory", Target: "operator and instance managers, peak RSS (no target)", Figure: memoryFigure(res), Met: "n/a (no target)"})
	return checks
}

// clientChecks judge issue 54's targets on the client's view: the
// writer's longest pause across each kind of try.
func clientChecks(res *Results) []benchkit.Check {
	pause := "the writer's longest pause through " + clusterName + "-rw"
	checks := []benchkit.Check{}
	for _, f := range []struct {
		scenario, how string
		s             Series
	}{
		{"client: failover, no grace", "primary's pod deleted at once", res.FailoverNoGrace},
		{"client: failover, 1 s grace", "primary's pod deleted, 1 s grace", res.Failover},
		{"client: failover, default grace", "primary's pod deleted, 30 s grace", res.FailoverDefaultGrace},
	} {
		if len(f.s.Tries) == 0 {
			continue
		}
		checks = append(checks, seriesCheck(f.scenario, fmt.Sprintf("%s: %s p99 ≤ %g s", f.how, pause, clientFailoverTarget), f.s.clientView(), res.Tries, clientFailoverTarget))
	}
	checks = append(checks, seriesCheck("client: switchover", fmt.Sprintf("spec.primary: %s p99 ≤ %g s", pause, clientSwitchoverTarget), res.Switchover.clientView(), res.Tries, clientSwitchoverTarget))
	if res.LeaseDurationSeconds > 0 {
		bound := res.LeaseDurationSeconds + clientCutOffMargin.Seconds()
		checks = append(checks, seriesCheck("client: cut-off", fmt.Sprintf("primary cut off: %s p99 ≤ the lease's %g s + %g s = %g s", pause, res.LeaseDurationSeconds, clientCutOffMargin.Seconds(), bound), res.CutOff.clientView(), res.Tries, bound))
	}
	return checks
}

func timedFigure(t Timed) string {
	if !t.OK {
		if t.Error == "" {
			return "not measured"
		}
		return "failed: " + t.Error
	}
	return fmt.Sprintf("%.2f s", t.Seconds)
}

// seriesCheck judges a series on its p99 over every try asked for: a try
// that did not complete misses the target, one this program failed to run
// (or fewer tries than asked) leaves it not judged.
func seriesCheck(scenario, target string, s Series, tries int, bound float64) benchkit.Check {
	c := benchkit.Check{Scenario: scenario, Target: target, Figure: seriesFigure(s)}
	timedOut, errs := 0, 0
	for _, t := range s.Tries {
		switch {
		case t.TimedOut:
			timedOut++
		case t.Seconds == nil:
			errs++
		}
	}
	switch {
	case timedOut > 0:
		c.Met = fmt.Sprintf("no (%d of %d tries did not complete)", timedOut, len(s.Tries))
	case errs > 0 || len(s.Tries) < tries || s.Seconds.Samples == 0:
		c.Met = benchkit.NotJudged(fmt.Sprintf("%d of %d tries measured", s.Seconds.Samples, tries))
	default:
		c.Met = benchkit.YesNo(s.Seconds.P99 <= bound)
	}
	return c
}

func seriesFigure(s Series) string {
	if len(s.Tries) == 0 {
		return "not measured"
	}
	each := make([]string, len(s.Tries))
	for i, t := range s.Tries {
		switch {
		case t.Seconds != nil:
			each[i] = fmt.Sprintf("%.2f", *t.Seconds)
		case t.TimedOut:
			each[i] = "none"
		default:
			each[i] = "error"
		}
	}
	if s.Seconds.Samples == 0 {
		return fmt.Sprintf("no try completed (%s)", strings.Join(each, ", "))
	}
	return fmt.Sprintf("p50 %.2f s, p99 %.2f s, max %.2f s over %d tries (%s s)", s.Seconds.P50, s.Seconds.P99, s.Seconds.Max, s.Seconds.Samples, strings.Join(each, ", "))
}

func lostCheck(res *Results) benchkit.Check {
	c := benchkit.Check{Scenario: "rows lost", Target: fmt.Sprintf("synchronous: %d, over every try: 0 committed rows lost", res.Cluster.Synchronous)}
	w := res.Writer
	switch {
	case w.Lost == nil && w.LostError != "":
		c.Figure, c.Met = "not counted: "+w.LostError, benchkit.NotJudged("the rows could not be counted")
	case w.Lost == nil:
		c.Figure, c.Met = "not counted", benchkit.NotJudged("the writer did not run")
	default:
		c.Figure = fmt.Sprintf("%d of %d committed rows missing (%d attempts failed while no primary was routed)", *w.Lost, w.Committed, w.Failed)
		c.Met = benchkit.YesNo(*w.Lost == 0 && w.Committed > 0)
	}
	return c
}

func memoryFigure(res *Results) string {
	f := res.Operator
	op := "operator not measured"
	if peak, ok := f.PeakHWMMiB(); ok {
		op = fmt.Sprintf("operator VmHWM %.1f MiB (sampled %.1f MiB)", peak, f.PeakRSSMiB)
	}
	if len(res.InstanceManagers) == 0 {
		return op + "; no instance manager sampled"
	}
	high := 0.0
	for _, p := range res.InstanceManagers {
		high = max(high, p.HWMMiB)
	}
	return fmt.Sprintf("%s; instance managers: VmHWM up to %.1f MiB over %d processes", op, high, len(res.InstanceManagers))
}

// Markdown renders results.md.
func Markdown(res *Results) string {
	w := &benchkit.MarkdownWriter{}
	w.Header("PostgresCluster benchmarks", "`test/bench` (`-scenarios postgres`, issue 29)", res.RunHeader)
	w.P("- Cluster: %d instances, synchronous: %d, storage %s, image %s; each try asked %d times\n\n", res.Cluster.Instances, res.Cluster.Synchronous, res.Cluster.Storage, res.Cluster.Image, res.Tries)
	w.Targets(res.Checks, false)

	w.P("## Tries\n\nFrom the action to the writer's first successful insert on the new primary through `%s-rw`; the writer's longest pause between two commits across it (the client's view); the primary in status as this program's polling saw it; the operator's events about the cluster; the cluster whole again (every instance ready) before the next try.\n\n", clusterName)
	w.P("| Operation | # | From | To | First write (s) | Longest pause (s) | In status (s) | Operator's events (s) | Whole again (s) | Note |\n|---|---:|---|---|---:|---:|---:|---|---:|---|\n")
	for _, op := range []struct {
		name string
		s    Series
	}{{"failover (pod deleted, 1 s grace)", res.Failover}, {"failover (pod deleted, no grace)", res.FailoverNoGrace},
		{"failover (pod deleted, 30 s grace)", res.FailoverDefaultGrace}, {"switchover", res.Switchover}, {"failover (cut off)", res.CutOff}} {
		for i, t := range op.s.Tries {
			note := ""
			switch {
			case t.Error != "":
				note = "error: " + t.Error
			case t.TimedOut:
				note = fmt.Sprintf("no write on a new primary within %s", tryTimeout)
			}
			w.P("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", op.name, i+1, t.From, t.To, optional(t.Seconds), optional(t.PauseSeconds), optional(t.StatusSeconds), eventsString(t.Events), optional(t.RecoveredSeconds), note)
		}
	}
	w.P("\n")
	wr := res.Writer
	lost := "not counted"
	if wr.Lost != nil {
		lost = fmt.Sprintf("%d", *wr.Lost)
	}
	w.P("## Writer\n\nEvery %d ms, each attempt given %d ms: `%s`. Committed %d rows, %d attempts failed, %s committed rows missing at the end.\n\n", wr.EveryMs, wr.TimeoutMs, wr.Statements, wr.Committed, wr.Failed, lost)

	w.P("## Memory and CPU\n\n| Process | PID | VmHWM (MiB) | Peak RSS sampled (MiB) | CPU (s) |\n|---|---:|---:|---:|---:|\n")
	f := res.Operator
	hwm := "—"
	if peak, ok := f.PeakHWMMiB(); ok {
		hwm = fmt.Sprintf("%.1f", peak)
	}
	w.P("| operator | | %s | %.1f | %.1f |\n", hwm, f.PeakRSSMiB, f.CPUSeconds)
	for _, p := range res.InstanceManagers {
		w.P("| instance manager of %s | %d | %.1f | %.1f | %.1f |\n", p.Name, p.PID, p.HWMMiB, p.PeakRSSMiB, p.CPUSeconds)
	}
	w.P("\nThe instance managers are sampled every %s while they run; a process that exited is known by its last sample (VmHWM is the kernel's peak up to then). PostgreSQL's own processes, children of the instance manager, are not included.\n\n", res.InstanceSampleEvery)
	w.P("## Chart\n\n![every try against its target](%s)\n\n", chartFile)
	var problems []string
	for _, h := range res.ClusterHealth {
		problems = append(problems, "cluster health: "+h)
	}
	problems = append(problems, res.Errors...)
	w.List("Errors and cluster health", problems)
	w.List("Method", res.Notes)
	return w.String()
}

// eventsString lists the events of a try in the order they came.
func eventsString(events map[string]float64) string {
	if len(events) == 0 {
		return "—"
	}
	reasons := slices.SortedFunc(maps.Keys(events), func(a, b string) int { return cmp.Compare(events[a], events[b]) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %.2f", r, events[r])
	}
	return strings.Join(parts, ", ")
}

func optional(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", *v)
}

// Chart is every try's time, by operation, against its target.
func Chart(res *Results) benchkit.DotChart {
	values := func(s Series) [][]float64 {
		var v []float64
		for _, t := range s.Tries {
			if t.Seconds != nil {
				v = append(v, *t.Seconds)
			}
		}
		return [][]float64{v}
	}
	f, sw := failoverTarget, switchoverTarget
	cut := &[]float64{res.LeaseDurationSeconds + cutOffMargin.Seconds()}[0]
	if res.LeaseDurationSeconds == 0 {
		cut = nil
	}
	return benchkit.DotChart{
		Title:  "PostgresCluster: action → first write on the new primary",
		YLabel: "seconds",
		Series: []benchkit.Series{{Name: "one try", Color: "#1f77b4"}},
		Groups: []benchkit.DotGroup{
			{Label: "failover\n(pod deleted)", Values: values(res.Failover), Target: &f},
			{Label: "failover\n(no grace)", Values: values(res.FailoverNoGrace), Target: &f},
			{Label: "failover\n(30 s grace)", Values: values(res.FailoverDefaultGrace), Target: &f},
			{Label: "switchover\n(spec.primary)", Values: values(res.Switchover), Target: &sw},
			{Label: "failover\n(cut off)", Values: values(res.CutOff), Target: cut},
		},
		Notes: []string{fmt.Sprintf("%d instances, synchronous: %d", res.Cluster.Instances, res.Cluster.Synchronous),
			fmt.Sprintf("%d CPUs, %s", res.Machine.NProc, res.Started.Format("2006-01-02")),
			"dashed: the target"},
	}
}

func notes() []string {
	return []string{
		"The cluster is fresh (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) with its simulation parts: each PostgresCluster pod's instance manager (the operator's binary, `instance run`) runs as a host process in a network namespace of its own with real PostgreSQL 15, and each Service of the cluster gets a proxy on a loopback address. The operator runs from deploy/ as its own ServiceAccount. This program connects only to those loopback addresses (and reads the pods' namespace addresses to name the server a row reached); never to a pod or Service cluster IP.",
		fmt.Sprintf("The writer inserts a row every %s through CLUSTER-rw's address; each attempt (a connection when it has none, then the insert) is given %s, after which it drops its connection and tries again through the Service, as an application would. An insert returns the address PostgreSQL saw the connection on, which names the instance that took it.", writeEvery, attemptTimeout),
		"The client's view (issue 54): for each try, the longest time between two consecutive commits of the writer, from its last commit before the action to its first on the new primary: what an application that writes all along waits at worst. It counts a graceful stop's last writes, and the writer's reconnection after the promotion.",
		"Failover: the primary's pod is deleted with a 1 s grace period (and, in two more series, with none, which removes it at once, and with the default 30 s), and the time is until the first successful insert on any other instance. Switchover: spec.primary is set to the next instance after the primary, the time is until the first insert on it, and spec.primary is emptied again once the cluster is whole. Cut-off: the host end of the primary's veth is set down (CutOffPostgres), the time is until the first insert on another instance; the link is then restored and the former primary rejoins.",
		"Before each try the cluster is whole (Ready, every instance ready, no change under way) and the writer commits; the time the cluster took to be whole again is shown, not judged. p50 and p99 are nearest-rank over the tries that completed: of 10 tries, p99 is the slowest. A try in which no insert reached a new primary within the try's limit fails the target; one this program could not run leaves it not judged.",
		"Operator's events: the first FailoverStarted, SwitchoverStarted and Promoted event about the cluster after the action, from its eventTime (the operator's clock, the same machine's), to show where a try's time goes.",
		"Rows lost: after the last try, the rows whose insert returned are looked up through CLUSTER-rw; with synchronous: 1 none may be missing.",
		"The cut-off target is the primary's Lease duration, read from the Lease db-primary, plus 5 s.",
	}
}
