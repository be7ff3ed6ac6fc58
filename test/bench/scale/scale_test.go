package scale

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/test/bench/benchkit"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func at(minute int, seconds float64) time.Time {
	return t0.Add(time.Duration(minute)*time.Minute + time.Duration(seconds*float64(time.Second)))
}

func TestNextMinuteLeavesTheMargin(t *testing.T) {
	g := NewWithT(t)
	g.Expect(nextMinute(at(0, 30), 10*time.Second)).To(Equal(at(1, 0)))
	g.Expect(nextMinute(at(0, 55), 10*time.Second)).To(Equal(at(2, 0)), "a minute less than the margin away is skipped")
	g.Expect(nextMinute(at(0, 0), 0)).To(Equal(at(1, 0)))
	g.Expect(minutes(at(1, 0), 3)).To(Equal([]time.Time{at(1, 0), at(2, 0), at(3, 0)}))
}

// The tally counts each owner due once at every scheduled time of the
// window: a pair with no run is missed, each extra run doubled, a run at a
// time not due unexpected; runs outside the window are not its own.
func TestTally(t *testing.T) {
	g := NewWithT(t)
	r := func(owner string, minute int, late float64) run {
		return run{Owner: owner, Name: owner + "-" + at(minute, 0).Format("1504"), Scheduled: at(minute, 0), Seen: at(minute, late), Created: at(minute, float64(int(late)))}
	}
	runs := []run{
		r("a", 0, 0.5), r("a", 1, 1.5), r("a", 2, 0.25),
		r("b", 0, 2), r("b", 2, 3),
		{Owner: "b", Name: "b-again", Scheduled: at(2, 0), Seen: at(2, 9)},
		{Owner: "a", Name: "a-odd", Scheduled: at(1, 30), Seen: at(1, 31)},
		r("a", 5, 0.1),     // after the window
		r("other", 1, 0.1), // not an owner of the window
	}
	tl := tally(runs, []string{"a", "b"}, minutes(at(0, 0), 3))
	g.Expect(tl.Expected).To(Equal(6))
	g.Expect(tl.Missed).To(Equal(1), "b at minute 1")
	g.Expect(tl.Doubled).To(Equal(1), "b at minute 2 twice")
	g.Expect(tl.Unexpected).To(Equal(1), "a at 1:30")
	g.Expect(tl.Runs).To(Equal(6), "5 pairs, one of them twice")
	g.Expect(tl.Lateness).To(Equal(benchkit.Distribution{Samples: 5, P50: 1.5, P99: 3, Max: 3}), "the first run of each pair")
	g.Expect(tl.CreatedLateness.Max).To(Equal(3.0))
	g.Expect(tally(nil, []string{"a"}, nil)).To(Equal(Tally{}))
}

// A restarted operator has taken the BackupJobs over when every one's run
// due across the restart was seen: the time is the last owner's first run,
// from the stop; an owner without that run leaves it short.
func TestTakenOver(t *testing.T) {
	g := NewWithT(t)
	stop := at(0, 58)
	runs := []run{
		{Owner: "a", Scheduled: at(1, 0), Seen: at(1, 4)},
		{Owner: "a", Scheduled: at(1, 0), Seen: at(1, 9)}, // a double: its first run counts
		{Owner: "b", Scheduled: at(1, 0), Seen: at(1, 6.5)},
		{Owner: "b", Scheduled: at(2, 0), Seen: at(2, 30)},     // the next minute's
		{Owner: "other", Scheduled: at(1, 0), Seen: at(1, 50)}, // not an owner
	}
	g.Expect(takenOver(runs, []string{"a", "b"}, at(1, 0), stop)).To(Equal(Wait{Seconds: 8.5, Reached: 2, Target: 2}))
	w := takenOver(runs, []string{"a", "b", "c"}, at(1, 0), stop)
	g.Expect(w.Reached).To(Equal(2))
	g.Expect(w.TimedOut).To(BeTrue(), "c's run was never seen")
	g.Expect(w.ok()).To(BeFalse())
}

// A deletion is early when the owner then had fewer than keepLast newer
// backups that had succeeded and were not being deleted, as the watch saw
// them.
func TestLedgerChecksEachDeletionAgainstRetention(t *testing.T) {
	g := NewWithT(t)
	l := newLedger(2)
	seen := func(name string, minute int, succeeded, deleting bool) {
		l.observe(name, "a", at(minute, 0), at(minute, 0), succeeded, deleting, at(minute, 1))
	}
	for m := range 3 {
		seen(string(rune('0'+m)), m, true, false)
	}
	seen("3", 3, false, false) // running
	seen("0", 0, true, true)   // two newer successes: on time
	seen("4", 4, false, false)
	seen("1", 1, true, true) // one newer success (2), 3 and 4 running: early
	byName := map[string]run{}
	for _, r := range l.snapshot() {
		byName[r.Name] = r
	}
	g.Expect(byName["0"].EarlyDeletion).To(BeFalse())
	g.Expect(byName["1"].EarlyDeletion).To(BeTrue())
	g.Expect(byName["1"].Deleted).To(Equal(at(1, 1)))
	g.Expect(l.seenAt(at(2, 0))).To(Equal(1))

	ret := retention(l.snapshot(), []string{"a", "b"}, at(0, 0), 3, at(0, -2), at(2, 50), true)
	g.Expect(ret.Kept).To(Equal(map[int]int{3: 1, 0: 1}), "a keeps 2, 3 and 4; b has none")
	g.Expect(ret.Deleted).To(Equal(2))
	g.Expect(ret.PerMinute).To(Equal([]int{1, 1, 0}))
	g.Expect(ret.EarlyDeletions).To(Equal(1))
}

func TestResourceSums(t *testing.T) {
	g := NewWithT(t)
	c := benchkit.RequestCounts{"POST example.com/tenants": 10, "PATCH example.com/tenants": 1, "PATCH example.com/tenants/status": 10, "POST namespaces": 20, "PUT leases": 3}
	g.Expect(sumResources(c, []string{"example.com/tenants-POST", "example.com/tenants/status", "namespaces"})).To(Equal(31.0), "creates of Tenants are this program's")
	g.Expect(pick(c, []string{"example.com/tenants-POST", "namespaces"})).To(Equal(benchkit.RequestCounts{"PATCH example.com/tenants": 1, "POST namespaces": 20}))
}

func TestWritesPerRun(t *testing.T) {
	g := NewWithT(t)
	from, to := at(0, -2), at(1, 50)
	backups, jobs, cron := newLedger(0), newLedger(0), newLedger(0)
	for i, name := range []string{"x", "y"} {
		backups.observe(name, "a", at(i, 0), at(i, 0), true, false, at(i, 1))
		jobs.observe(name, "a", at(i, 0), at(i, 0), true, false, at(i, 1))
		cron.observe(name, "c", at(i, 0), at(i, 0), true, false, at(i, 1))
	}
	backups.observe("old", "a", at(-1, 0), at(-1, 0), true, false, at(-1, 1))
	backups.observe("old", "a", at(-1, 0), at(-1, 0), true, true, at(1, 2))
	res := &Schedule{BackupJobs: Tally{Runs: 2}, CronJobs: Tally{Runs: 2},
		RawWrites: benchkit.RequestCounts{"PATCH example.com/backupjobs/status": 6, "PATCH persistentvolumeclaims": 4, "PUT batch/cronjobs/status": 4}}
	bj, cj := writesPerRun(volumeTarget, res, backups, jobs, cron, from, to,
		map[string]int{benchkit.OperatorName + "/BackupJob": 5, "cronjob-controller/CronJob": 4}, map[string]int{benchkit.OperatorName + "/BackupJob": 1})
	g.Expect(bj.ByKind).To(Equal(map[string]float64{"create PersistentVolumeClaim": 1, "delete PersistentVolumeClaim (retention)": 0.5, "create Job": 1,
		"patch PersistentVolumeClaim": 2, "status": 3, "events": 2}))
	g.Expect(bj.Total).To(Equal(9.5))
	g.Expect(cj.ByKind).To(Equal(map[string]float64{"create Job": 1, "status": 2, "events": 2}))
	g.Expect(writesString(cj)).To(Equal("5.00 (create Job 1.00, events 2.00, status 2.00)"))
}

func TestScheduleChecks(t *testing.T) {
	g := NewWithT(t)
	lat := func(p99 float64) Tally {
		return Tally{Expected: 10, Runs: 10, Lateness: benchkit.Distribution{Samples: 10, P50: 0.5, P99: p99, Max: p99}}
	}
	s := &Schedule{Target: snapshotTarget, Minutes: []string{"1", "2", "3", "4", "5"}, BackupJobs: lat(1.9), CronJobs: lat(1), Retention: Retention{KeepLast: 3, Kept: map[int]int{3: 10}, Settled: true, PerMinute: []int{0}}}
	met := func(n int, s *Schedule) map[string]string {
		out := map[string]string{}
		for _, c := range scheduleChecks(&RunResult{N: n}, s) {
			out[c.Target] = c.Met
		}
		return out
	}
	m := met(100, s)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("the CronJob controller's p99 + 1 s"), "yes"))
	g.Expect(m).NotTo(HaveKey(ContainSubstring("p99 ≤ 3 s")), "the absolute bound is at N=1000")
	g.Expect(m).To(HaveKeyWithValue("0 runs missed, 0 doubled", "yes"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("keepLast: 3"), "yes"))

	s.BackupJobs = lat(3.5)
	m = met(1000, s)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("the CronJob controller's p99 + 1 s"), "no"))
	g.Expect(m).To(HaveKeyWithValue("lateness p99 ≤ 3 s", "no"))

	s.BackupJobs.Missed = 1
	s.Retention = Retention{KeepLast: 3, Kept: map[int]int{3: 9, 4: 1}, Settled: true}
	m = met(100, s)
	g.Expect(m).To(HaveKeyWithValue("0 runs missed, 0 doubled", "no"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("keepLast: 3"), "no"))
	s.Retention = Retention{KeepLast: 3, Kept: map[int]int{3: 10}}
	g.Expect(met(100, s)).To(HaveKeyWithValue(ContainSubstring("keepLast: 3"), HavePrefix("not judged")), "deletions still coming")
	s.Minutes = s.Minutes[:3]
	g.Expect(met(100, s)).To(HaveKeyWithValue(ContainSubstring("keepLast: 3"), "not judged (a window of 3 runs leaves keepLast: 3 nothing to delete)"))
	s.BackupJobs, s.CronJobs = Tally{}, Tally{}
	g.Expect(met(100, s)).To(HaveKeyWithValue(ContainSubstring("the CronJob controller's p99 + 1 s"), HavePrefix("not judged")))
}

func TestTenantChecks(t *testing.T) {
	g := NewWithT(t)
	ratio := func(v float64) *float64 { return &v }
	round := func(op, sc float64) TenantRound {
		return TenantRound{Operator: Wait{Seconds: op, Reached: 10, Target: 10}, Scripted: Wait{Seconds: sc, Reached: 10, Target: 10}, Ratio: ratio(op / sc)}
	}
	tn := &Tenants{Rounds: []TenantRound{round(11, 10), round(13, 10), round(12, 10)}, Ratio: ratio(1.2),
		TokensIssued: 1000, TokenRequests: 1000, SecretsWithToken: 1000,
		Idle:    &Window{Seconds: 60, Settled: true},
		Restart: &Window{Settled: true, Reconciled: &Wait{Seconds: 3, Reached: 1000, Target: 1000}}}
	met := func(n int) map[string]string {
		out := map[string]string{}
		for _, c := range tenantChecks(&RunResult{N: n}, tn) {
			out[c.Target] = c.Met
		}
		return out
	}
	m := met(1000)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("within 1.2× the scripted reference"), "yes"), "1.2 ≤ 1.2")
	g.Expect(m).To(HaveKeyWithValue("0 writes in 60 s idle", "yes"))
	g.Expect(m).To(HaveKeyWithValue("0 writes after a restart", "yes"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("credentials issued once"), "yes"))
	g.Expect(met(100)).To(HaveKeyWithValue(ContainSubstring("within 1.2×"), "n/a (target at N=1000)"))

	tn.Ratio = ratio(1.3)
	tn.Idle.Total = 2
	tn.Restart.TokenRequests = 1
	m = met(1000)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("within 1.2×"), "no"))
	g.Expect(m).To(HaveKeyWithValue("0 writes in 60 s idle", "no"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("credentials issued once"), "no"))
	tn.Rounds[1].Ratio, tn.Ratio = nil, nil
	g.Expect(met(1000)).To(HaveKeyWithValue(ContainSubstring("within 1.2×"), HavePrefix("not judged")))
	tn.Rounds[1].Operator.TimedOut = true
	g.Expect(met(1000)).To(HaveKeyWithValue(ContainSubstring("within 1.2×"), "no (the operator did not finish)"))
}

func TestRestartChecks(t *testing.T) {
	g := NewWithT(t)
	rs := &Restart{Settled: true, Reconciled: Wait{Seconds: 5, Reached: 3000, Target: 3000},
		Writes:   map[string]benchkit.RequestCounts{"Websites": {}, "Tenants": {}, "BackupJobs": {"POST snapshot.storage.k8s.io/volumesnapshots": 1000}},
		Runs:     Tally{Expected: 3000, Runs: 3000},
		Operator: benchkit.Footprint{HWMMiB: []float64{150, 199.5}}}
	met := func(n int) map[string]string {
		out := map[string]string{}
		for _, c := range restartChecks(&RunResult{N: n}, rs) {
			out[c.Target] = c.Met
		}
		return out
	}
	m := met(1000)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("≤ 200 MiB"), "yes"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("0 writes to Websites, Tenants"), "yes"), "the BackupJobs' run is not the restart's")
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("missed or doubled"), "yes"))
	g.Expect(met(100)).To(HaveKeyWithValue(ContainSubstring("≤ 200 MiB"), "n/a (target at N=1000)"))
	rs.Operator.HWMMiB = append(rs.Operator.HWMMiB, 201)
	rs.Writes["Tenants"] = benchkit.RequestCounts{"PATCH example.com/tenants/status": 1}
	rs.Runs.Missed = 1
	m = met(1000)
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("≤ 200 MiB"), "no"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("0 writes to Websites, Tenants"), "no"))
	g.Expect(m).To(HaveKeyWithValue(ContainSubstring("missed or doubled"), "no"))
}

// A results file renders and charts, with every section its runs have.
func TestMarkdownAndCharts(t *testing.T) {
	g := NewWithT(t)
	lat := Tally{Expected: 20, Runs: 20, Lateness: benchkit.Distribution{Samples: 20, P50: 0.4, P99: 1.2, Max: 1.3}}
	res := &Results{Scenarios: Scenarios, Ns: []int{10}, Window: "2m0s", Idle: "30s", Rounds: 1, LoadWorkers: 16,
		Runs: []*RunResult{{N: 10,
			Schedule: []*Schedule{{Target: snapshotTarget, BackupJobs: lat, CronJobs: lat, Minutes: []string{"2026-12-02T10:01:00Z"},
				Retention: Retention{KeepLast: 3, Kept: map[int]int{3: 10}, Settled: true, PerMinute: []int{0, 10}}}},
			Tenants: &Tenants{Rounds: []TenantRound{{Operator: Wait{Seconds: 2, Reached: 10, Target: 10}, Scripted: Wait{Seconds: 1, Reached: 10, Target: 10}}}},
			Restart: &Restart{AcrossMinute: "2026-12-02T10:05:00Z", Ready: Wait{Seconds: 9, Reached: 30, Target: 30}},
			Errors:  []string{"tenant-onboarding: boom\nstack"},
		}}}
	res.Started = t0
	res.Checks = Checks(res)
	md := Markdown(res)
	for _, want := range []string{"## Schedule, N = 10", "| snapshot | BackupJobs | 20 / 20 | 0 | 0 | 0.400 | 1.200 | 1.300 |", "## Tenants, N = 10",
		"## Platform restart, N = 10 of each kind", "- N=10: tenant-onboarding: boom\n", "![lateness of BackupJobs and CronJobs](lateness.svg)"} {
		g.Expect(md).To(ContainSubstring(want))
	}
	g.Expect(strings.Count(LatenessChart(res).SVG(), "<circle")).To(Equal(6+2), "p50, p99 and max of each side, and the legend")
	g.Expect(strings.Count(OnboardingChart(res).SVG(), "<circle")).To(Equal(2 + 2))
}

// The token request this program makes for a restarted operator's
// kubeconfig is not the operator's write.
func TestWithoutOwnTokenRequest(t *testing.T) {
	g := NewWithT(t)
	g.Expect(withoutOwnTokenRequest(benchkit.RequestCounts{"POST serviceaccounts/token": 1, "PUT leases": 2})).To(Equal(benchkit.RequestCounts{"PUT leases": 2}))
	g.Expect(withoutOwnTokenRequest(benchkit.RequestCounts{"POST serviceaccounts/token": 3})).To(Equal(benchkit.RequestCounts{"POST serviceaccounts/token": 2}))
	g.Expect(withoutOwnTokenRequest(benchkit.RequestCounts{})).To(BeEmpty())
}
