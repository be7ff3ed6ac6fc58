package backupjob

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
)

// Candidate is a backup as retention sees it.
type Candidate struct {
	// Name of the claim or snapshot.
	Name string
	// ScheduledTime of the run that made it; the daily, weekly and monthly
	// rules bucket by it.
	ScheduledTime time.Time
	// Result of that run. Running backups are never deleted and count for
	// no rule.
	Result v1alpha1.BackupResult
	// Pinned is true when the backup carries example.com/pinned=true.
	Pinned bool
	// Verified is true when the backup's restore drill passed.
	Verified bool
}

// Policy is spec.retention, with zero for a rule that is not set.
type Policy struct {
	Last, Daily, Weekly, Monthly, Failed int
}

// PolicyFrom reads spec.retention. A nil retention gets the CRD's default,
// keepLast 7 and keepFailed 1; the API server sets it on every BackupJob,
// so nil is only seen in tests and fakes.
func PolicyFrom(r *v1alpha1.BackupRetention) Policy {
	if r == nil {
		return Policy{Last: 7, Failed: 1}
	}
	get := func(p *int32) int { return int(ptr.Deref(p, 0)) }
	return Policy{
		Last:    get(r.KeepLast),
		Daily:   get(r.KeepDaily),
		Weekly:  get(r.KeepWeekly),
		Monthly: get(r.KeepMonthly),
		Failed:  get(r.KeepFailed),
	}
}

// Verdict is what retention decided about one backup.
type Verdict struct {
	Candidate
	// KeptBy lists the rules that keep the backup, in the order of the
	// RetentionRule constants; empty for a running backup and for one to
	// delete.
	KeptBy []v1alpha1.RetentionRule
	// Delete is true when no rule keeps the backup and it is not running.
	Delete bool
}

// Retain decides which backups the policy keeps, and why, with the
// daily, weekly and monthly buckets read in loc (spec.timeZone). It
// returns one verdict per backup, newest first (by scheduled time, then by
// name, so that the order never depends on the input's).
//
// The rules, as restic and k8up apply them, over the successful backups
// newest first: keepLast keeps the first N; keepDaily keeps the first one
// of each day, until N days have one kept (so: the newest backup of each of
// the N most recent days that have one); keepWeekly by ISO week and
// keepMonthly by month alike. Failed runs count for none of these: they are
// kept by keepFailed only, the N newest. Three floors hold whatever the
// policy says: the newest successful backup is kept (NewestSuccessful), the
// newest one whose restore drill passed (NewestVerified), and every pinned
// one, successful or not.
func Retain(backups []Candidate, p Policy, loc *time.Location) []Verdict {
	verdicts := make([]Verdict, len(backups))
	for i, b := range backups {
		verdicts[i] = Verdict{Candidate: b}
	}
	slices.SortFunc(verdicts, func(a, b Verdict) int {
		return cmp.Or(b.ScheduledTime.Compare(a.ScheduledTime), cmp.Compare(b.Name, a.Name))
	})

	rules := []*bucketRule{
		{rule: v1alpha1.KeptByLast, left: p.Last, bucket: func(time.Time) bucket { return bucket{} }, everyOne: true},
		{rule: v1alpha1.KeptByDaily, left: p.Daily, bucket: dayOf},
		{rule: v1alpha1.KeptByWeekly, left: p.Weekly, bucket: isoWeekOf},
		{rule: v1alpha1.KeptByMonthly, left: p.Monthly, bucket: monthOf},
	}
	newestSuccessfulSeen, newestVerifiedSeen := false, false
	failedLeft := p.Failed
	for i := range verdicts {
		v := &verdicts[i]
		switch v.Result {
		case v1alpha1.BackupSucceeded:
			if !newestSuccessfulSeen {
				newestSuccessfulSeen = true
				v.KeptBy = append(v.KeptBy, v1alpha1.KeptAsNewestSuccessful)
			}
			if v.Verified && !newestVerifiedSeen {
				newestVerifiedSeen = true
				v.KeptBy = append(v.KeptBy, v1alpha1.KeptAsNewestVerified)
			}
			if v.Pinned {
				v.KeptBy = append(v.KeptBy, v1alpha1.KeptAsPinned)
			}
			local := v.ScheduledTime.In(loc)
			for _, r := range rules {
				if r.keeps(local) {
					v.KeptBy = append(v.KeptBy, r.rule)
				}
			}
		case v1alpha1.BackupFailed:
			if v.Pinned {
				v.KeptBy = append(v.KeptBy, v1alpha1.KeptAsPinned)
			}
			if failedLeft > 0 {
				failedLeft--
				v.KeptBy = append(v.KeptBy, v1alpha1.KeptByFailed)
			}
		default:
			// Running (or a result this version does not know): never
			// deleted, never counted.
			continue
		}
		v.Delete = len(v.KeptBy) == 0
	}
	return verdicts
}

// bucket identifies a day, an ISO week or a month.
type bucket struct{ year, n int }

func dayOf(t time.Time) bucket     { return bucket{t.Year(), t.YearDay()} }
func monthOf(t time.Time) bucket   { return bucket{t.Year(), int(t.Month())} }
func isoWeekOf(t time.Time) bucket { y, w := t.ISOWeek(); return bucket{y, w} }

// bucketRule is one of keepLast, keepDaily, keepWeekly and keepMonthly,
// while Retain walks the successful backups newest first.
type bucketRule struct {
	rule   v1alpha1.RetentionRule
	left   int                    // how many more it may keep
	bucket func(time.Time) bucket // the bucket of a backup's local time
	// everyOne makes every backup a bucket of its own (keepLast).
	everyOne bool
	last     *bucket // the bucket of the backup it kept last
}

// keeps reports whether the rule keeps the next (older) successful backup,
// whose scheduled time in the BackupJob's zone is local.
func (r *bucketRule) keeps(local time.Time) bool {
	if r.left == 0 {
		return false
	}
	b := r.bucket(local)
	if !r.everyOne && r.last != nil && *r.last == b {
		return false
	}
	r.left--
	r.last = &b
	return true
}
