package scale

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

const (
	latenessChart   = "lateness.svg"
	onboardingChart = "onboarding.svg"
	// absoluteLatenessTarget is issue 31's bound on the BackupJobs' p99
	// lateness at scheduleTargetN, and cronMargin how far above the
	// CronJob controller's p99 it may be at every N.
	absoluteLatenessTarget = 3.0
	cronMargin             = 1.0
	scheduleTargetN        = 1000
)

// Checks judges the targets of issue 31 from the results.
func Checks(res *Results) []benchkit.Check {
	var checks []benchkit.Check
	for _, r := range res.Runs {
		for _, s := range r.Schedule {
			checks = append(checks, scheduleChecks(r, s)...)
		}
		if t := r.Tenants; t != nil {
			checks = append(checks, tenantChecks(r, t)...)
		}
		if rs := r.Restart; rs != nil {
			checks = append(checks, restartChecks(r, rs)...)
		}
	}
	return checks
}

// healthy withholds a verdict that needs pods kept ready when the node
// lifecycle controller marked pods not ready.
func healthy(r *RunResult, met string) string {
	if len(r.ClusterHealth) > 0 {
		return met + " (invalid: pods were marked not ready, see cluster health)"
	}
	return met
}

func scheduleChecks(r *RunResult, s *Schedule) []benchkit.Check {
	scenario := "schedule (" + s.Target + ")"
	add := func(checks []benchkit.Check, target, figure, met string) []benchkit.Check {
		return append(checks, benchkit.Check{Scenario: scenario, N: r.N, Target: target, Figure: figure, Met: met})
	}
	var checks []benchkit.Check
	bj, cj := s.BackupJobs, s.CronJobs
	figure := fmt.Sprintf("BackupJobs p99 %.3f s (p50 %.3f, max %.3f, %d runs); CronJobs p99 %.3f s (p50 %.3f, max %.3f, %d runs)",
		bj.Lateness.P99, bj.Lateness.P50, bj.Lateness.Max, bj.Lateness.Samples, cj.Lateness.P99, cj.Lateness.P50, cj.Lateness.Max, cj.Lateness.Samples)
	met := benchkit.NotJudged("a side has no run")
	if bj.Lateness.Samples > 0 && cj.Lateness.Samples > 0 {
		met = benchkit.YesNo(bj.Lateness.P99 <= cj.Lateness.P99+cronMargin)
	}
	checks = add(checks, fmt.Sprintf("lateness (run seen − scheduled) p99 ≤ the CronJob controller's p99 + %g s, same cluster and window", cronMargin), figure, met)
	if r.N == scheduleTargetN {
		met = benchkit.NotJudged("no run")
		if bj.Lateness.Samples > 0 {
			met = benchkit.YesNo(bj.Lateness.P99 <= absoluteLatenessTarget)
		}
		checks = add(checks, fmt.Sprintf("lateness p99 ≤ %g s", absoluteLatenessTarget), fmt.Sprintf("p99 %.3f s", bj.Lateness.P99), met)
	}
	checks = add(checks, "0 runs missed, 0 doubled",
		fmt.Sprintf("BackupJobs: %d missed, %d doubled, %d unexpected of %d due (status.missedRuns %d); CronJobs: %d missed, %d doubled of %d due",
			bj.Missed, bj.Doubled, bj.Unexpected, bj.Expected, s.MissedRunsInStatus, cj.Missed, cj.Doubled, cj.Expected),
		notJudgedIfEmpty(bj.Expected, benchkit.YesNo(bj.Missed == 0 && bj.Doubled == 0 && bj.Unexpected == 0 && s.MissedRunsInStatus == 0)))
	ret := s.Retention
	met = benchkit.YesNo(ret.EarlyDeletions == 0 && len(ret.Kept) == 1 && ret.Kept[keepLast] > 0)
	switch {
	case len(s.Minutes) <= keepLast:
		met = benchkit.NotJudged(fmt.Sprintf("a window of %d runs leaves keepLast: %d nothing to delete", len(s.Minutes), keepLast))
	case !ret.Settled && met == "yes":
		met = benchkit.NotJudged("the deletions had not stopped")
	}
	checks = add(checks, fmt.Sprintf("keepLast: %d: every BackupJob keeps exactly %d; no deletion before %d newer backups succeeded", keepLast, keepLast, keepLast),
		fmt.Sprintf("kept %s; %d deleted in the window (%s a minute); %d deleted early", keptString(ret.Kept), ret.Deleted, intsString(ret.PerMinute), ret.EarlyDeletions),
		notJudgedIfEmpty(bj.Expected, met))
	checks = add(checks, "writes per run by kind (no target)", "BackupJobs: "+writesString(s.BackupWrites)+"; CronJobs: "+writesString(s.CronWrites), "n/a (no target)")
	checks = add(checks, "operator CPU in the window and peak RSS (no target)", fmt.Sprintf("CPU %.1f s; %s", s.OperatorCPUSeconds, footprintString(s.Operator)), "n/a (no target)")
	return checks
}

func notJudgedIfEmpty(expected int, met string) string {
	if expected == 0 {
		return benchkit.NotJudged("the window did not run")
	}
	return met
}

func keptString(kept map[int]int) string {
	if len(kept) == 0 {
		return "nothing"
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(kept)) {
		parts = append(parts, fmt.Sprintf("%d BackupJobs %d", kept[n], n))
	}
	return strings.Join(parts, ", ")
}

func intsString(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

func writesString(w WritesPerRun) string {
	if w.Runs == 0 {
		return "no run"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w.ByKind)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, w.ByKind[k]))
	}
	return fmt.Sprintf("%.2f (%s)", w.Total, strings.Join(parts, ", "))
}

func footprintString(f benchkit.Footprint) string {
	if peak, ok := f.PeakHWMMiB(); ok {
		return fmt.Sprintf("VmHWM %.1f MiB (sampled %.1f MiB)", peak, f.PeakRSSMiB)
	}
	return fmt.Sprintf("no VmHWM recorded (sampled %.1f MiB)", f.PeakRSSMiB)
}

func tenantChecks(r *RunResult, t *Tenants) []benchkit.Check {
	add := func(checks []benchkit.Check, target, figure, met string) []benchkit.Check {
		return append(checks, benchkit.Check{Scenario: "tenants", N: r.N, Target: target, Figure: figure, Met: met})
	}
	var checks []benchkit.Check
	var rounds []string
	judged, timedOut := true, false
	for _, round := range t.Rounds {
		if round.Operator.TimedOut {
			timedOut = true
		}
		if round.Ratio == nil {
			judged = false
			rounds = append(rounds, fmt.Sprintf("— (operator %s, scripted %s)", waitString(round.Operator), waitString(round.Scripted)))
			continue
		}
		rounds = append(rounds, fmt.Sprintf("%.2f× (%.2f s ÷ %.2f s)", *round.Ratio, round.Operator.Seconds, round.Scripted.Seconds))
	}
	figure := "median " + ratioString(t.Ratio) + " of " + fmt.Sprint(len(t.Rounds)) + " rounds: " + strings.Join(rounds, "; ")
	var met string
	switch {
	case r.N != tenantTargetN:
		met = fmt.Sprintf("n/a (target at N=%d)", tenantTargetN)
	case timedOut:
		met = "no (the operator did not finish)"
	case !judged || t.Ratio == nil:
		met = benchkit.NotJudged("a round has no ratio")
	default:
		met = benchkit.YesNo(*t.Ratio <= tenantRatioTarget)
	}
	checks = add(checks, fmt.Sprintf("onboarding: every Tenant Ready within %g× the scripted reference (median of rounds)", tenantRatioTarget), figure, met)
	checks = add(checks, "operator writes per Tenant in onboarding (no target)", mapString(t.WritesPerTenant), "n/a (no target)")
	if i := t.Idle; i != nil {
		checks = add(checks, fmt.Sprintf("0 writes in %.0f s idle", i.Seconds), windowString(i), benchkit.YesNo(i.Total == 0))
	}
	if rs := t.Restart; rs != nil {
		met := benchkit.YesNo(rs.Total == 0 && rs.Reconciled != nil && !rs.Reconciled.TimedOut)
		if !rs.Settled && met == "yes" {
			met = benchkit.NotJudged("the writes had not stopped")
		}
		fig := windowString(rs)
		if rs.Reconciled != nil {
			fig += fmt.Sprintf("; every Tenant reconciled %s after SIGTERM; the new process's GETs %g", waitString(*rs.Reconciled), rs.Requests["GET"])
		}
		checks = add(checks, "0 writes after a restart", fig, met)
		checks = add(checks, "credentials issued once per Tenant, none again by the restart",
			fmt.Sprintf("%g issued for %d Tenants (%g token requests), %d Secrets hold a token; the restart: %g token requests, %d Secrets changed",
				t.TokensIssued, r.N, t.TokenRequests, t.SecretsWithToken, rs.TokenRequests, t.SecretsChangedByRestart),
			benchkit.YesNo(t.TokensIssued == float64(r.N) && t.SecretsWithToken == r.N && rs.TokenRequests == 0 && t.SecretsChangedByRestart == 0))
	}
	checks = add(checks, "operator peak RSS (no target)", footprintString(t.Operator), "n/a (no target)")
	return checks
}

func waitString(w Wait) string {
	if w.TimedOut {
		return fmt.Sprintf("timed out after %.1f s at %d/%d", w.Seconds, w.Reached, w.Target)
	}
	if w.Target == 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.2f s", w.Seconds)
}

func ratioString(r *float64) string {
	if r == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f×", *r)
}

func mapString(m map[string]float64) string {
	if len(m) == 0 {
		return "not measured"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %g", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func windowString(w *Window) string {
	s := fmt.Sprintf("%g (%s; operator events %d)", w.Total, countsString(w.Writes), w.OperatorEvents)
	if !w.Settled {
		s += ", unsettled: writes still coming"
	}
	return s
}

func countsString(c benchkit.RequestCounts) string {
	if len(c) == 0 {
		return "no write"
	}
	return strings.Join(c.Sorted(), " ")
}

func restartChecks(r *RunResult, rs *Restart) []benchkit.Check {
	add := func(checks []benchkit.Check, target, figure, met string) []benchkit.Check {
		return append(checks, benchkit.Check{Scenario: "platform restart", N: r.N, Target: target, Figure: figure, Met: met})
	}
	var checks []benchkit.Check
	figure := footprintString(rs.Operator)
	if len(rs.Operator.HWMMiB) > 1 {
		each := make([]string, len(rs.Operator.HWMMiB))
		for i, h := range rs.Operator.HWMMiB {
			each[i] = fmt.Sprintf("%.1f", h)
		}
		figure += " (each process: " + strings.Join(each, ", ") + " MiB)"
	}
	met := fmt.Sprintf("n/a (target at N=%d)", restartTargetN)
	if r.N == restartTargetN {
		met = benchkit.NotJudged("no VmHWM recorded")
		if peak, ok := rs.Operator.PeakHWMMiB(); ok {
			met = benchkit.YesNo(peak <= restartRSSTargetMiB)
		}
	}
	checks = add(checks, fmt.Sprintf("operator peak RSS (VmHWM) ≤ %d MiB with N of each kind at once", restartRSSTargetMiB), figure, met)
	webTenant := sumResources(rs.Writes["Websites"], websiteResources) + sumResources(rs.Writes["Tenants"], tenantResources)
	met = benchkit.YesNo(webTenant == 0 && !rs.Reconciled.TimedOut)
	if !rs.Settled && met == "yes" {
		met = benchkit.NotJudged("the writes had not stopped")
	}
	checks = add(checks, "0 writes to Websites, Tenants and their children after the restart",
		fmt.Sprintf("%g (Websites: %s; Tenants: %s); every Website and Tenant reconciled %s after SIGTERM", webTenant, countsString(rs.Writes["Websites"]), countsString(rs.Writes["Tenants"]), waitString(rs.Reconciled)), met)
	checks = add(checks, "BackupJob writes in the restart's window, the run due at "+rs.AcrossMinute+" included (no target)", countsString(rs.Writes["BackupJobs"]), "n/a (no target)")
	checks = add(checks, "no scheduled run missed or doubled across the restart",
		fmt.Sprintf("%d missed, %d doubled, %d unexpected of %d due; lateness p50 %.3f s, p99 %.3f s, max %.3f s", rs.Runs.Missed, rs.Runs.Doubled, rs.Runs.Unexpected, rs.Runs.Expected, rs.Runs.Lateness.P50, rs.Runs.Lateness.P99, rs.Runs.Lateness.Max),
		notJudgedIfEmpty(rs.Runs.Expected, benchkit.YesNo(rs.Runs.Missed == 0 && rs.Runs.Doubled == 0 && rs.Runs.Unexpected == 0)))
	checks = add(checks, "the restart's GETs and time to reconcile every object (no target)",
		fmt.Sprintf("every Website and Tenant reconciled %s after SIGTERM, every BackupJob's run due at %s seen %s after SIGTERM (/readyz after %.2f s); the new process's requests %s",
			waitString(rs.Reconciled), rs.AcrossMinute, waitString(rs.TakenOver), rs.ReadyzSeconds, mapString(rs.Requests)), "n/a (no target)")
	return checks
}

// Markdown renders results.md.
func Markdown(res *Results) string {
	w := &benchkit.MarkdownWriter{}
	w.Header("Tenant and BackupJob at platform scale", "`test/bench` (`-scenarios "+strings.Join(res.Scenarios, ",")+"`, issue 31)", res.RunHeader)
	w.P("- Scenarios: %s; N: %v; schedule window %s; Tenants' idle window %s; %d rounds of the onboarding; load client: %d workers\n\n", strings.Join(res.Scenarios, ", "), res.Ns, res.Window, res.Idle, res.Rounds, res.LoadWorkers)
	w.Targets(res.Checks, true)
	for _, r := range res.Runs {
		if len(r.Schedule) > 0 {
			w.P("## Schedule, N = %d\n\n| Target | Side | Runs / due | Missed | Doubled | Lateness p50 (s) | p99 (s) | max (s) | From creationTimestamp p50 / p99 (s) |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n", r.N)
			for _, s := range r.Schedule {
				for _, side := range []struct {
					name string
					t    Tally
				}{{"BackupJobs", s.BackupJobs}, {"CronJobs", s.CronJobs}} {
					t := side.t
					w.P("| %s | %s | %d / %d | %d | %d | %.3f | %.3f | %.3f | %.0f / %.0f |\n", s.Target, side.name, t.Runs, t.Expected, t.Missed, t.Doubled,
						t.Lateness.P50, t.Lateness.P99, t.Lateness.Max, t.CreatedLateness.P50, t.CreatedLateness.P99)
				}
			}
			w.P("\n| Target | Setup (s) | Scheduled times | Operator CPU in the window (s) | Operator peak | Writes per BackupJob run | Writes per CronJob run |\n|---|---:|---|---:|---|---|---|\n")
			for _, s := range r.Schedule {
				w.P("| %s | %.1f | %s | %.1f | %s | %s | %s |\n", s.Target, s.SetupSeconds, strings.Join(s.Minutes, ", "), s.OperatorCPUSeconds, footprintString(s.Operator), writesString(s.BackupWrites), writesString(s.CronWrites))
			}
			w.P("\nAll writes of each window, by every client: ")
			for i, s := range r.Schedule {
				if i > 0 {
					w.P("; ")
				}
				w.P("%s: %s", s.Target, countsString(s.RawWrites))
			}
			w.P("\n\n")
		}
		if t := r.Tenants; t != nil {
			w.P("## Tenants, N = %d\n\n| Round | Scripted reference | Operator | Operator ÷ scripted | Operator CPU (s) |\n|---:|---|---|---|---:|\n", r.N)
			for i, round := range t.Rounds {
				w.P("| %d | %s | %s | %s | %.1f |\n", i+1, waitString(round.Scripted), waitString(round.Operator), ratioString(round.Ratio), round.OperatorCPUSeconds)
			}
			w.P("\nOnboarding writes of the last round, by every client: %s\n\n", countsString(t.RawWrites))
		}
		if rs := r.Restart; rs != nil {
			w.P("## Platform restart, N = %d of each kind\n\nEvery object Ready %s after the first create; the operator stopped %s before %s (in %.2f s), the new process ready %.2f s after SIGTERM, every Website and Tenant reconciled %s after SIGTERM, every BackupJob's run due at %s seen %s after SIGTERM; window %.1f s%s; the operator's events in it %d.\n\n",
				r.N, waitString(rs.Ready), stopBefore, rs.AcrossMinute, rs.StopSeconds, rs.ReadyzSeconds, waitString(rs.Reconciled), rs.AcrossMinute, waitString(rs.TakenOver), rs.WindowSeconds, unsettled(rs.Settled), rs.OperatorEvents)
		}
	}
	w.P("## Charts\n\n![lateness of BackupJobs and CronJobs](%s)\n\n![Tenants onboarding against the scripted reference](%s)\n\n", latenessChart, onboardingChart)
	var problems []string
	for _, r := range res.Runs {
		for _, h := range r.ClusterHealth {
			problems = append(problems, fmt.Sprintf("N=%d: cluster health: %s", r.N, h))
		}
		for _, e := range r.Errors {
			line, _, _ := strings.Cut(e, "\n")
			problems = append(problems, fmt.Sprintf("N=%d: %s", r.N, line))
		}
	}
	w.List("Errors and cluster health", problems)
	w.List("Method", res.Notes)
	return w.String()
}

func unsettled(settled bool) string {
	if settled {
		return ""
	}
	return ", unsettled: writes still coming"
}

// LatenessChart shows p50, p99 and max lateness of each side, by N and
// target, against the target of the BackupJobs' p99.
func LatenessChart(res *Results) benchkit.DotChart {
	c := benchkit.DotChart{Title: "Runs: seen − scheduled (dots: p50, p99, max)", YLabel: "seconds",
		Series: []benchkit.Series{{Name: "BackupJobs", Color: "#1f77b4"}, {Name: "CronJobs (reference)", Color: "#ff7f0e"}},
		Notes:  []string{fmt.Sprintf("%d CPUs, %s", res.Machine.NProc, res.Started.Format("2006-01-02")), "dashed: the BackupJobs' p99 target"}}
	for _, r := range res.Runs {
		for _, s := range r.Schedule {
			pts := func(t Tally) []float64 {
				if t.Lateness.Samples == 0 {
					return nil
				}
				return []float64{t.Lateness.P50, t.Lateness.P99, t.Lateness.Max}
			}
			g := benchkit.DotGroup{Label: fmt.Sprintf("N=%d\n%s", r.N, s.Target), Values: [][]float64{pts(s.BackupJobs), pts(s.CronJobs)}}
			if s.CronJobs.Lateness.Samples > 0 {
				target := s.CronJobs.Lateness.P99 + cronMargin
				if r.N == scheduleTargetN {
					target = min(target, absoluteLatenessTarget)
				}
				g.Target = &target
			}
			c.Groups = append(c.Groups, g)
		}
	}
	return c
}

// OnboardingChart shows every round's time until every Tenant was Ready,
// by N.
func OnboardingChart(res *Results) benchkit.DotChart {
	c := benchkit.DotChart{Title: "Tenants: created → every one Ready (a dot per round)", YLabel: "seconds",
		Series: []benchkit.Series{{Name: "operator", Color: "#1f77b4"}, {Name: "scripted reference", Color: "#ff7f0e"}},
		Notes:  []string{fmt.Sprintf("%d CPUs, %s", res.Machine.NProc, res.Started.Format("2006-01-02")), fmt.Sprintf("dashed: %g× the scripted median", tenantRatioTarget)}}
	for _, r := range res.Runs {
		t := r.Tenants
		if t == nil {
			continue
		}
		var op, sc []float64
		for _, round := range t.Rounds {
			if round.Operator.ok() {
				op = append(op, round.Operator.Seconds)
			}
			if round.Scripted.ok() {
				sc = append(sc, round.Scripted.Seconds)
			}
		}
		g := benchkit.DotGroup{Label: fmt.Sprintf("N=%d", r.N), Values: [][]float64{op, sc}}
		if r.N == tenantTargetN && len(sc) > 0 {
			target := tenantRatioTarget * benchkit.Summarize(sc).P50
			g.Target = &target
		}
		c.Groups = append(c.Groups, g)
	}
	return c
}

func notes(cfg Config) []string {
	return []string{
		"Every phase runs on a fresh local cluster of its own (etcd, kube-apiserver, kube-controller-manager with its CronJob controller, kube-scheduler, kwok nodes), with the operator installed from deploy/ and run as its own ServiceAccount with its defaults. The schedule and the platform restart run the local cluster's simulation parts: a provisioner that binds claims, and a snapshot simulator that makes each VolumeSnapshot ready to use; kwok completes every Job's pod.",
		fmt.Sprintf("Schedule: N BackupJobs on %q with keepLast: %d (a snapshot target; then, on another cluster, a volume target whose copy Job kwok completes), each of its own bound source claim, and N CronJobs on %q with a one-pod Job, created at once. The window holds %d whole minutes, from the first at least 10 s after every BackupJob had its next run in status; each scheduled time's runs are waited for %s, then the window ends, before the next minute.", everyMinute, keepLast, everyMinute, int(cfg.Window.Minutes()), windowGrace),
		"Lateness is the time from a run's scheduled time (the BackupJob's annotation example.com/scheduled-time on its backup; the CronJob controller's batch.kubernetes.io/cronjob-scheduled-timestamp on its Job) until this program's watch first saw the run's object (a backup claim or snapshot, a Job): both sides are seen by the same kind of watch in the same cluster and window. The same from creationTimestamp (whole seconds) is shown beside. A BackupJob or CronJob due at a scheduled time with no run is missed; each extra run for it is doubled; a run at a time that is not due is unexpected.",
		"Writes per run: the objects the watch saw created and deleted in the window (backups, their Jobs; retention's and the Job history's deletions), the status writes the API server counted (only the operator writes backupjobs/status, only the CronJob controller cronjobs/status), the claims' PATCHes (the operator's; the volume binder updates claims with PUT), and the events each controller reported; divided by the side's runs.",
		fmt.Sprintf("Retention: after the window every BackupJob and CronJob is suspended and the writes are waited for to stop (60 s at most); then the backups left of each BackupJob are counted (keepLast: %d keeps exactly %d). Each deletion the watch sees is checked: the BackupJob must then have had %d newer backups that had succeeded and were not being deleted.", keepLast, keepLast, keepLast),
		fmt.Sprintf("Tenants: N Tenants with two namespaces, an owner (a User), a ServiceAccount and credentials (a kubeconfig Secret with a token), the default isolation (a NetworkPolicy per namespace) and Pod Security level, no quota, created at once by a client with %d workers and no client-side rate limit. The scripted reference, on a cluster of its own with deploy/ installed and no operator, creates the same Tenants with the same client while %d workers (as many as the operator has) make each one's objects from the operator's own builders (two namespaces, a RoleBinding and a NetworkPolicy in each, the ServiceAccount, the Secret, a token request and the Secret's filling) and write its status Ready once; it writes no events. Both are timed from the first create until this program's watch saw every Tenant Ready; the target is judged on the median of the rounds' ratios.", cfg.LoadWorkers, cfg.ScriptedWorkers),
		"The operator's writes per Tenant are its own count of child writes by operation and kind (platform_operator_child_writes_total), the API server's count of tenants/status writes and of the other writes to tenants (its finalizer; the creates are this program's), and its events about Tenants. The idle window and the restart count the API server's writes to the Tenants' resources (tenants except creates, tenants/status, namespaces, rolebindings, networkpolicies, serviceaccounts, serviceaccounts/token, secrets, resourcequotas, limitranges) and the operator's events; the restart's window runs from SIGTERM until the new process had reconciled every Tenant (its controller_runtime_reconcile_total and an empty queue) and the writes stopped, less the one token request this program makes for the new process's kubeconfig (as a Deployment's pod would get its token). Credentials: the tokens the operator counts as issued, the API server's token requests, the Secrets that hold a token, and the Secrets whose resourceVersion the restart changed.",
		fmt.Sprintf("Platform restart: N Websites, N Tenants and N BackupJobs (snapshot target, keepLast: %d) on one operator; once every one is Ready, the operator is stopped (SIGTERM) %s before a scheduled time at least a minute later, and started again at once. The window runs from SIGTERM until the new process had reconciled N Websites and N Tenants with those controllers' queues empty and the writes to Websites, Tenants and their children stopped. The BackupJobs write at every scheduled minute and their queue need not empty: they are taken over when the run each owes first, the one due at the minute across the restart, was seen; the BackupJobs' runs of the minute before, the minute across and the minute after the restart are tallied.", keepLast, stopBefore),
		"Memory: VmHWM (the kernel's exact peak) of each operator process read just before it stopped, and RSS sampled every 200 ms.",
		"A restarted process's requests by method (rest_client_requests_total) include the TokenReviews and SubjectAccessReviews (POST) with which it authorizes this program's scrapes of its metrics, every 500 ms while the benchmark waits for it to reconcile every object.",
	}
}
