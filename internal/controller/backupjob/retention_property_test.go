package backupjob

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"example.com/platform-operator/api/v1alpha1"
)

// history makes a deterministic, random history of days days of backups in
// loc: zero to three runs a day at any time of day (so some fall next to
// midnight, and on daylight saving days), three in four successful, some
// pinned, the newest one or two still running.
func history(t *testing.T, seed uint64, days int, loc *time.Location) []Candidate {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x6261636b7570))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, loc)
	var out []Candidate
	for d := range days {
		runs := []int{0, 1, 1, 1, 1, 2, 2, 3}[r.IntN(8)]
		for range runs {
			at := time.Date(start.Year(), start.Month(), start.Day()+d, r.IntN(24), r.IntN(60), 0, 0, loc)
			c := Candidate{Name: fmt.Sprintf("b-%d-%d", at.Unix(), r.IntN(1000)), ScheduledTime: at, Result: v1alpha1.BackupSucceeded}
			if r.IntN(4) == 0 {
				c.Result = v1alpha1.BackupFailed
			}
			c.Pinned = r.IntN(30) == 0
			c.Verified = c.Result == v1alpha1.BackupSucceeded && r.IntN(10) == 0
			if d >= days-1 && r.IntN(2) == 0 {
				c.Result = v1alpha1.BackupRunning
			}
			out = append(out, c)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// referenceRetain is Retain written from the definitions, one backup at a
// time and without state, in quadratic time: a backup is kept by
//   - NewestSuccessful when it succeeded and no successful backup is newer;
//   - NewestVerified when its drill passed and no backup whose drill
//     passed is newer;
//   - Last when it succeeded and fewer than keepLast successful ones are
//     newer;
//   - Daily (Weekly, Monthly) when it succeeded, no successful backup of
//     its day is newer, and fewer than keepDaily days newer than its own
//     have a successful backup;
//   - Failed when it failed and fewer than keepFailed failed ones are newer;
//   - Pinned when it is pinned and finished.
func referenceRetain(backups []Candidate, p Policy, loc *time.Location) map[string][]v1alpha1.RetentionRule {
	newer := func(a, b Candidate) bool { // a is newer than b
		return a.ScheduledTime.After(b.ScheduledTime) || (a.ScheduledTime.Equal(b.ScheduledTime) && a.Name > b.Name)
	}
	day := func(t time.Time) string { return t.In(loc).Format("2006-01-02") }
	week := func(t time.Time) string { y, w := t.In(loc).ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }
	month := func(t time.Time) string { return t.In(loc).Format("2006-01") }

	// The bucket names of each backup, worked out once: the loops below
	// look them up n*n times.
	keys := map[string][3]string{}
	for _, c := range backups {
		keys[c.Name] = [3]string{day(c.ScheduledTime), week(c.ScheduledTime), month(c.ScheduledTime)}
	}

	out := map[string][]v1alpha1.RetentionRule{}
	for _, c := range backups {
		var rules []v1alpha1.RetentionRule
		newerOK, newerFailed, newerVerified := 0, 0, 0
		for _, o := range backups {
			if newer(o, c) && o.Verified && o.Result == v1alpha1.BackupSucceeded {
				newerVerified++
			}
			if newer(o, c) && o.Result == v1alpha1.BackupSucceeded {
				newerOK++
			}
			if newer(o, c) && o.Result == v1alpha1.BackupFailed {
				newerFailed++
			}
		}
		switch c.Result {
		case v1alpha1.BackupSucceeded:
			if newerOK == 0 {
				rules = append(rules, v1alpha1.KeptAsNewestSuccessful)
			}
			if c.Verified && newerVerified == 0 {
				rules = append(rules, v1alpha1.KeptAsNewestVerified)
			}
			if c.Pinned {
				rules = append(rules, v1alpha1.KeptAsPinned)
			}
			if newerOK < p.Last {
				rules = append(rules, v1alpha1.KeptByLast)
			}
			for k, g := range []struct {
				rule v1alpha1.RetentionRule
				n    int
			}{{v1alpha1.KeptByDaily, p.Daily}, {v1alpha1.KeptByWeekly, p.Weekly}, {v1alpha1.KeptByMonthly, p.Monthly}} {
				own := keys[c.Name][k]
				newerBuckets := map[string]bool{} // of newer successful backups, counted up to n
				newestOfBucket := true
				for _, o := range backups {
					if !newer(o, c) || o.Result != v1alpha1.BackupSucceeded {
						continue
					}
					if keys[o.Name][k] == own {
						newestOfBucket = false
						break
					}
					if len(newerBuckets) < g.n {
						newerBuckets[keys[o.Name][k]] = true
					}
				}
				if newestOfBucket && len(newerBuckets) < g.n {
					rules = append(rules, g.rule)
				}
			}
		case v1alpha1.BackupFailed:
			if c.Pinned {
				rules = append(rules, v1alpha1.KeptAsPinned)
			}
			if newerFailed < p.Failed {
				rules = append(rules, v1alpha1.KeptByFailed)
			}
		}
		out[c.Name] = rules
	}
	return out
}

var propertyPolicies = []Policy{
	{Last: 7, Failed: 1}, // the default
	{},
	{Daily: 7, Weekly: 4, Monthly: 12, Failed: 2},
	{Last: 3, Daily: 14, Weekly: 8, Monthly: 24, Failed: 5},
	{Weekly: 260},
	{Monthly: 240},
	{Last: 400},
	{Daily: 1, Failed: 100},
}

// On 400-day histories, Retain equals the reference and holds the
// guarantees the README makes.
func TestRetainOnGeneratedHistories(t *testing.T) {
	for _, tz := range []string{"UTC", "Europe/Berlin", "Pacific/Chatham"} {
		loc := mustLoad(t, tz)
		for seed := uint64(1); seed <= 4; seed++ {
			backups := history(t, seed, 400, loc)
			for _, p := range propertyPolicies {
				t.Run(fmt.Sprintf("%s/seed %d/%+v", tz, seed, p), func(t *testing.T) {
					verdicts := Retain(backups, p, loc)
					checkAgainstReference(t, backups, verdicts, referenceRetain(backups, p, loc))
					checkGuarantees(t, backups, verdicts, p, loc)
				})
			}
		}
	}
}

func checkAgainstReference(t *testing.T, backups []Candidate, verdicts []Verdict, want map[string][]v1alpha1.RetentionRule) {
	t.Helper()
	if len(verdicts) != len(backups) {
		t.Fatalf("%d verdicts for %d backups", len(verdicts), len(backups))
	}
	for _, v := range verdicts {
		w, found := want[v.Name]
		if !found {
			t.Fatalf("verdict for %s, which is not a backup", v.Name)
		}
		if !slices.Equal(v.KeptBy, w) {
			t.Errorf("%s (%s, %s, pinned %t): kept by %v, reference %v", v.Name, v.Result, v.ScheduledTime, v.Pinned, v.KeptBy, w)
		}
		if wantDelete := len(w) == 0 && v.Result != v1alpha1.BackupRunning; v.Delete != wantDelete {
			t.Errorf("%s: delete %t, reference %t", v.Name, v.Delete, wantDelete)
		}
	}
}

func checkGuarantees(t *testing.T, backups []Candidate, verdicts []Verdict, p Policy, loc *time.Location) {
	t.Helper()
	// Newest first.
	for i := 1; i < len(verdicts); i++ {
		if verdicts[i].ScheduledTime.After(verdicts[i-1].ScheduledTime) {
			t.Fatalf("%s after %s: not newest first", verdicts[i].Name, verdicts[i-1].Name)
		}
	}
	newestOK := -1
	counts := map[v1alpha1.RetentionRule]int{}
	for i, v := range verdicts {
		if newestOK < 0 && v.Result == v1alpha1.BackupSucceeded {
			newestOK = i
		}
		for _, r := range v.KeptBy {
			counts[r]++
		}
		if v.Delete && (v.Pinned || v.Result == v1alpha1.BackupRunning || len(v.KeptBy) > 0) {
			t.Errorf("%s deleted: pinned %t, %s, kept by %v", v.Name, v.Pinned, v.Result, v.KeptBy)
		}
	}
	if newestOK >= 0 && (verdicts[newestOK].Delete || !slices.Contains(verdicts[newestOK].KeptBy, v1alpha1.KeptAsNewestSuccessful)) {
		t.Errorf("the newest successful backup %s is not kept as such: %v", verdicts[newestOK].Name, verdicts[newestOK].KeptBy)
	}
	for rule, limit := range map[v1alpha1.RetentionRule]int{v1alpha1.KeptByLast: p.Last, v1alpha1.KeptByDaily: p.Daily,
		v1alpha1.KeptByWeekly: p.Weekly, v1alpha1.KeptByMonthly: p.Monthly, v1alpha1.KeptByFailed: p.Failed} {
		if counts[rule] > limit {
			t.Errorf("%d backups kept by %s, policy %d", counts[rule], rule, limit)
		}
	}

	// Failed runs never push out successful ones: without them, every
	// successful backup gets the same verdict.
	var withoutFailed []Candidate
	for _, b := range backups {
		if b.Result != v1alpha1.BackupFailed {
			withoutFailed = append(withoutFailed, b)
		}
	}
	alone := map[string]Verdict{}
	for _, v := range Retain(withoutFailed, p, loc) {
		alone[v.Name] = v
	}
	for _, v := range verdicts {
		if v.Result == v1alpha1.BackupSucceeded && (!slices.Equal(v.KeptBy, alone[v.Name].KeptBy) || v.Delete != alone[v.Name].Delete) {
			t.Errorf("%s: kept by %v with failed runs, %v without", v.Name, v.KeptBy, alone[v.Name].KeptBy)
		}
	}
}
