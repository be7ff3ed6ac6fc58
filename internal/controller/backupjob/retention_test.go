package backupjob

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
)

const (
	ok      = v1alpha1.BackupSucceeded
	failed  = v1alpha1.BackupFailed
	running = v1alpha1.BackupRunning
)

// b is a backup named after its scheduled time in UTC, such as
// "03-14T02:30", which keeps the tables readable.
func b(result v1alpha1.BackupResult, at time.Time) Candidate {
	return Candidate{Name: at.UTC().Format("01-02T15:04"), ScheduledTime: at, Result: result}
}

func pinned(c Candidate) Candidate { c.Pinned = true; return c }

func verified(c Candidate) Candidate { c.Verified = true; return c }

// kept formats verdicts as "name:Rule+Rule" for the kept ones, newest
// first, and "name:-" for the deleted, "name:running" for the running.
func kept(vs []Verdict) string {
	var parts []string
	for _, v := range vs {
		switch {
		case v.Delete:
			parts = append(parts, v.Name+":-")
		case len(v.KeptBy) == 0:
			parts = append(parts, v.Name+":running")
		default:
			rules := make([]string, len(v.KeptBy))
			for i, r := range v.KeptBy {
				rules[i] = string(r)
			}
			parts = append(parts, v.Name+":"+strings.Join(rules, "+"))
		}
	}
	return strings.Join(parts, " ")
}

func TestRetain(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	day := func(d, h int) time.Time { return utc(2026, 3, d, h, 30, 0) }
	tests := []struct {
		name    string
		backups []Candidate
		policy  Policy
		loc     *time.Location
		want    string
	}{
		{"nothing to decide", nil, Policy{Last: 3}, time.UTC, ""},
		{"the newest backup whose drill passed stays until a newer one passes",
			[]Candidate{b(ok, day(3, 2)), b(ok, day(2, 2)), verified(b(ok, day(1, 2)))}, Policy{Last: 1}, time.UTC,
			"03-03T02:30:NewestSuccessful+Last 03-02T02:30:- 03-01T02:30:NewestVerified"},
		{"keepLast keeps the newest, the floor is one of them",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(2, 2)), b(ok, day(3, 2))}, Policy{Last: 2}, time.UTC,
			"03-03T02:30:NewestSuccessful+Last 03-02T02:30:Last 03-01T02:30:-"},
		{"an empty policy keeps only the newest successful backup",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(2, 2)), b(failed, day(3, 2))}, Policy{}, time.UTC,
			"03-03T02:30:- 03-02T02:30:NewestSuccessful 03-01T02:30:-"},
		{"failed runs never push out successful ones",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(2, 2)), b(failed, day(3, 2)), b(failed, day(4, 2)), b(failed, day(5, 2))}, Policy{Last: 2, Failed: 1}, time.UTC,
			"03-05T02:30:Failed 03-04T02:30:- 03-03T02:30:- 03-02T02:30:NewestSuccessful+Last 03-01T02:30:Last"},
		{"the newest successful survives a week of failures and keepLast 0",
			[]Candidate{b(ok, day(1, 2)), b(failed, day(2, 2)), b(failed, day(3, 2)), b(failed, day(4, 2))}, Policy{Daily: 0, Failed: 0}, time.UTC,
			"03-04T02:30:- 03-03T02:30:- 03-02T02:30:- 03-01T02:30:NewestSuccessful"},
		{"only failures: keepFailed keeps the newest, no floor",
			[]Candidate{b(failed, day(1, 2)), b(failed, day(2, 2)), b(failed, day(3, 2))}, Policy{Last: 5, Failed: 2}, time.UTC,
			"03-03T02:30:Failed 03-02T02:30:Failed 03-01T02:30:-"},
		{"keepDaily keeps the newest of each day",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(1, 14)), b(ok, day(2, 2)), b(ok, day(2, 14)), b(ok, day(3, 2))}, Policy{Daily: 2}, time.UTC,
			"03-03T02:30:NewestSuccessful+Daily 03-02T14:30:Daily 03-02T02:30:- 03-01T14:30:- 03-01T02:30:-"},
		{"keepDaily counts days that have a backup, not calendar days",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(5, 2)), b(failed, day(6, 2)), b(ok, day(9, 2))}, Policy{Daily: 2}, time.UTC,
			"03-09T02:30:NewestSuccessful+Daily 03-06T02:30:- 03-05T02:30:Daily 03-01T02:30:-"},
		{"a failed run is not the newest of its day",
			[]Candidate{b(ok, day(1, 2)), b(failed, day(1, 14))}, Policy{Daily: 1}, time.UTC,
			"03-01T14:30:- 03-01T02:30:NewestSuccessful+Daily"},
		{"days are read in the time zone: 23:30 UTC is the next day in Berlin",
			[]Candidate{b(ok, utc(2026, 6, 1, 21, 30, 0)), b(ok, utc(2026, 6, 1, 22, 30, 0))}, Policy{Daily: 2}, berlin,
			"06-01T22:30:NewestSuccessful+Daily 06-01T21:30:Daily"},
		{"the same backups in UTC are one day",
			[]Candidate{b(ok, utc(2026, 6, 1, 21, 30, 0)), b(ok, utc(2026, 6, 1, 22, 30, 0))}, Policy{Daily: 2}, time.UTC,
			"06-01T22:30:NewestSuccessful+Daily 06-01T21:30:-"},
		{"ISO weeks: Thursday 31 December 2026 and Sunday 3 January 2027 are week 53 of 2026",
			[]Candidate{b(ok, utc(2026, 12, 27, 2, 0, 0)), b(ok, utc(2026, 12, 31, 2, 0, 0)), b(ok, utc(2027, 1, 3, 2, 0, 0)), b(ok, utc(2027, 1, 4, 2, 0, 0))}, Policy{Weekly: 3}, time.UTC,
			"01-04T02:00:NewestSuccessful+Weekly 01-03T02:00:Weekly 12-31T02:00:- 12-27T02:00:Weekly"},
		{"keepMonthly keeps the newest of each month",
			[]Candidate{b(ok, utc(2026, 1, 31, 2, 0, 0)), b(ok, utc(2026, 2, 1, 2, 0, 0)), b(ok, utc(2026, 2, 28, 2, 0, 0)), b(ok, utc(2026, 4, 1, 2, 0, 0))}, Policy{Monthly: 3}, time.UTC,
			"04-01T02:00:NewestSuccessful+Monthly 02-28T02:00:Monthly 02-01T02:00:- 01-31T02:00:Monthly"},
		{"months in Berlin: 23:30 UTC on 31 January is February there",
			[]Candidate{b(ok, utc(2026, 1, 31, 23, 30, 0)), b(ok, utc(2026, 2, 10, 2, 0, 0))}, Policy{Monthly: 2}, berlin,
			"02-10T02:00:NewestSuccessful+Monthly 01-31T23:30:-"},
		{"rules add up on the same backup",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(2, 2))}, Policy{Last: 1, Daily: 1, Weekly: 1, Monthly: 1}, time.UTC,
			"03-02T02:30:NewestSuccessful+Last+Daily+Weekly+Monthly 03-01T02:30:-"},
		{"pinned backups stay, failed or old",
			[]Candidate{pinned(b(ok, day(1, 2))), pinned(b(failed, day(2, 2))), b(failed, day(3, 2)), b(ok, day(4, 2))}, Policy{Last: 1}, time.UTC,
			"03-04T02:30:NewestSuccessful+Last 03-03T02:30:- 03-02T02:30:Pinned 03-01T02:30:Pinned"},
		{"a pinned backup still counts for the rules",
			[]Candidate{b(ok, day(1, 2)), pinned(b(ok, day(2, 2)))}, Policy{Last: 1}, time.UTC,
			"03-02T02:30:NewestSuccessful+Pinned+Last 03-01T02:30:-"},
		{"running backups are never deleted and count for nothing",
			[]Candidate{b(ok, day(1, 2)), b(ok, day(2, 2)), b(running, day(3, 2))}, Policy{Last: 1}, time.UTC,
			"03-03T02:30:running 03-02T02:30:NewestSuccessful+Last 03-01T02:30:-"},
		{"the same scheduled time: ordered by name",
			[]Candidate{{Name: "a", ScheduledTime: day(1, 2), Result: ok}, {Name: "b", ScheduledTime: day(1, 2), Result: ok}}, Policy{Last: 1}, time.UTC,
			"b:NewestSuccessful+Last a:-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kept(Retain(tt.backups, tt.policy, tt.loc)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRetainDoesNotDependOnTheInputOrder(t *testing.T) {
	backups := []Candidate{b(ok, utc(2026, 3, 1, 2, 0, 0)), b(failed, utc(2026, 3, 2, 2, 0, 0)), b(ok, utc(2026, 3, 3, 2, 0, 0))}
	reversed := slices.Clone(backups)
	slices.Reverse(reversed)
	p := Policy{Last: 1, Failed: 1}
	if a, b := kept(Retain(backups, p, time.UTC)), kept(Retain(reversed, p, time.UTC)); a != b {
		t.Fatalf("%s\n!=\n%s", a, b)
	}
}

func TestPolicyFrom(t *testing.T) {
	if got := PolicyFrom(nil); got != (Policy{Last: 7, Failed: 1}) {
		t.Errorf("nil: %+v, want the CRD's default", got)
	}
	r := &v1alpha1.BackupRetention{KeepLast: ptr.To[int32](1), KeepDaily: ptr.To[int32](2), KeepWeekly: ptr.To[int32](3), KeepMonthly: ptr.To[int32](4), KeepFailed: ptr.To[int32](5)}
	if got := PolicyFrom(r); got != (Policy{1, 2, 3, 4, 5}) {
		t.Errorf("%+v", got)
	}
	if got := PolicyFrom(&v1alpha1.BackupRetention{}); got != (Policy{}) {
		t.Errorf("empty: %+v, want zero", got)
	}
}
