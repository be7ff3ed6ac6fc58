package backupjob

import (
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustParse(t *testing.T, schedule, timeZone string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(schedule, timeZone)
	if err != nil {
		t.Fatalf("ParseSchedule(%q, %q): %v", schedule, timeZone, err)
	}
	return s
}

func utc(y int, m time.Month, d, h, min, s int) time.Time {
	return time.Date(y, m, d, h, min, s, 0, time.UTC)
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		schedule, timeZone string
		// wantErr is the start of the error: the field, and why; empty
		// when the schedule is valid.
		wantErr string
	}{
		{"@daily", "", ""},
		{"@hourly", "UTC", ""},
		{"@every 10s", "", ""},
		{"@every 1h30m", "Europe/Berlin", ""},
		{"30 2 * * MON-FRI", "Europe/Berlin", ""},
		{"*/5 * * * *", "America/Argentina/ComodRivadavia", ""},
		{"0 0 29 2 *", "", ""}, // leap days come within five years

		{"61 * * * *", "", `spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59)`},
		{"* * * *", "", `spec.schedule: Invalid value: "* * * *": expected exactly 5 fields`},
		{"", "", `spec.schedule: Invalid value: "": empty spec string`},
		{"@fortnightly", "", `spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor`},
		{"@every 500ms", "", `spec.schedule: Invalid value: "@every 500ms": @every needs a whole number of seconds, at least 1s`},
		{"@every 1500ms", "", `spec.schedule: Invalid value: "@every 1500ms": @every needs a whole number of seconds`},
		{"@every -10s", "", `spec.schedule: Invalid value: "@every -10s": @every needs a whole number of seconds`},
		{"0 0 30 2 *", "", `spec.schedule: Invalid value: "0 0 30 2 *": never matches a date`},
		{"TZ=Europe/Berlin 0 2 * * *", "", `spec.schedule: Invalid value: "TZ=Europe/Berlin 0 2 * * *": set the time zone in spec.timeZone`},
		{"CRON_TZ=UTC", "", `spec.schedule: Invalid value: "CRON_TZ=UTC": set the time zone in spec.timeZone`},
		{"0 2 * * *", "Mars/Olympus_Mons", `spec.timeZone: Invalid value: "Mars/Olympus_Mons": unknown time zone`},
		{"0 2 * * *", "Local", `spec.timeZone: Invalid value: "Local": must be an IANA time zone name`},
		{"0 2 * * *", "../../etc/passwd", `spec.timeZone: Invalid value: "../../etc/passwd": unknown time zone`},
	}
	for _, tt := range tests {
		t.Run(tt.schedule+" in "+tt.timeZone, func(t *testing.T) {
			s, err := ParseSchedule(tt.schedule, tt.timeZone)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tt.wantErr == "" && s == nil:
				t.Fatal("want a schedule, got nil")
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("want an error starting %q, got %v", tt.wantErr, err)
			}
		})
	}
}

// The cron library panics on a TZ= prefix without a space; the parser
// turns that into an error, as the built-in CronJob does.
func TestParseCronRecoversFromPanics(t *testing.T) {
	if _, err := parseCron("TZ=UTC"); err == nil || !strings.Contains(err.Error(), "malformed schedule") {
		t.Fatalf("want a malformed schedule error, got %v", err)
	}
}

func TestParseScheduleUsesTheTimeZone(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	for _, tz := range []string{"", "UTC", "Europe/Berlin"} {
		s := mustParse(t, "0 3 * * *", tz)
		want := time.UTC
		if tz == "Europe/Berlin" {
			want = berlin
		}
		if s.Location().String() != want.String() {
			t.Errorf("%q: location %s, want %s", tz, s.Location(), want)
		}
	}
}

func TestNext(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	lordHowe := mustLoad(t, "Australia/Lord_Howe")
	newYork := mustLoad(t, "America/New_York")
	tests := []struct {
		name               string
		schedule, timeZone string
		from               time.Time
		want               []time.Time // the next scheduled times after from, in order
	}{
		{"every minute", "* * * * *", "", utc(2026, 11, 30, 10, 0, 30),
			[]time.Time{utc(2026, 11, 30, 10, 1, 0), utc(2026, 11, 30, 10, 2, 0), utc(2026, 11, 30, 10, 3, 0)}},
		{"every hour, strictly after from", "@hourly", "", utc(2026, 11, 30, 10, 0, 0),
			[]time.Time{utc(2026, 11, 30, 11, 0, 0), utc(2026, 11, 30, 12, 0, 0)}},
		{"every day across a month end", "0 3 * * *", "", utc(2026, 11, 30, 4, 0, 0),
			[]time.Time{utc(2026, 12, 1, 3, 0, 0), utc(2026, 12, 2, 3, 0, 0)}},
		{"every 10s counts from from, in whole seconds", "@every 10s", "", utc(2026, 11, 30, 12, 0, 0).Add(500 * time.Millisecond),
			[]time.Time{utc(2026, 11, 30, 12, 0, 10), utc(2026, 11, 30, 12, 0, 20), utc(2026, 11, 30, 12, 0, 30)}},
		{"a day in Berlin is read in Berlin", "0 3 * * *", "Europe/Berlin", utc(2026, 11, 30, 0, 0, 0),
			[]time.Time{utc(2026, 11, 30, 2, 0, 0), utc(2026, 12, 1, 2, 0, 0)}},

		// Spring: on 2026-03-29 Berlin's clocks jump from 02:00 CET to 03:00
		// CEST (01:00 UTC). The cron library skips 02:30 that day; here it
		// runs at the jump.
		{"02:30 daily, spring: runs at 03:00 when the clock skips 02:30", "30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 11, 0, 0),
			[]time.Time{utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 0, 30, 0), utc(2026, 3, 31, 0, 30, 0)}},
		{"02:00 daily, spring: runs at the jump", "0 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 11, 0, 0),
			[]time.Time{utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 0, 0, 0)}},
		{"every 15 minutes of hour 2, spring: one run for the skipped hour", "*/15 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 23, 0, 0),
			[]time.Time{utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 0, 0, 0), utc(2026, 3, 30, 0, 15, 0)}},
		{"03:00 daily, spring: 03:00 exists, one run", "0 3 * * *", "Europe/Berlin", utc(2026, 3, 28, 11, 0, 0),
			[]time.Time{utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 30, 1, 0, 0)}},
		{"02:30 and 03:30, spring: the jump, then 03:30", "30 2,3 * * *", "Europe/Berlin", utc(2026, 3, 28, 11, 0, 0),
			[]time.Time{utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 29, 1, 30, 0), utc(2026, 3, 30, 0, 30, 0)}},
		{"02:30 on weekdays, spring Sunday: nothing skipped that matches", "30 2 * * MON-FRI", "Europe/Berlin", utc(2026, 3, 28, 11, 0, 0),
			[]time.Time{utc(2026, 3, 30, 0, 30, 0)}},
		{"hourly, spring: follows elapsed time, no run for the missing hour", "@hourly", "Europe/Berlin", utc(2026, 3, 28, 23, 30, 0),
			[]time.Time{utc(2026, 3, 29, 0, 0, 0), utc(2026, 3, 29, 1, 0, 0), utc(2026, 3, 29, 2, 0, 0)}},
		{"every hour at :30, spring: follows elapsed time", "30 * * * *", "Europe/Berlin", utc(2026, 3, 28, 23, 45, 0),
			[]time.Time{utc(2026, 3, 29, 0, 30, 0), utc(2026, 3, 29, 1, 30, 0)}},
		{"every 1h, spring: elapsed time", "@every 1h", "Europe/Berlin", utc(2026, 3, 28, 23, 30, 0),
			[]time.Time{utc(2026, 3, 29, 0, 30, 0), utc(2026, 3, 29, 1, 30, 0), utc(2026, 3, 29, 2, 30, 0)}},

		// Autumn: on 2026-10-25 Berlin's clocks fall back from 03:00 CEST to
		// 02:00 CET (01:00 UTC), so 02:30 happens twice. The cron library
		// runs at both; here only at the first.
		{"02:30 daily, autumn: runs once, at the first 02:30", "30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 10, 0, 0),
			[]time.Time{utc(2026, 10, 25, 0, 30, 0), utc(2026, 10, 26, 1, 30, 0), utc(2026, 10, 27, 1, 30, 0)}},
		{"02:00 daily, autumn: the repeated 02:00 does not run", "0 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 10, 0, 0),
			[]time.Time{utc(2026, 10, 25, 0, 0, 0), utc(2026, 10, 26, 1, 0, 0)}},
		{"02:30 daily, autumn, from between the two 02:30s", "30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 45, 0),
			[]time.Time{utc(2026, 10, 26, 1, 30, 0)}},
		{"hourly, autumn: both 02:00s run", "@hourly", "Europe/Berlin", utc(2026, 10, 24, 23, 30, 0),
			[]time.Time{utc(2026, 10, 25, 0, 0, 0), utc(2026, 10, 25, 1, 0, 0), utc(2026, 10, 25, 2, 0, 0)}},

		// Other zones: New York jumps at 02:00 local on 2026-03-08; Lord
		// Howe Island moves its clocks by 30 minutes, from 02:00 to 02:30,
		// on 2026-10-04.
		{"New York, spring", "30 2 * * *", "America/New_York", time.Date(2026, 3, 7, 12, 0, 0, 0, newYork),
			[]time.Time{time.Date(2026, 3, 8, 3, 0, 0, 0, newYork), time.Date(2026, 3, 9, 2, 30, 0, 0, newYork)}},
		{"Lord Howe, a 30-minute jump", "15 2 * * *", "Australia/Lord_Howe", time.Date(2026, 10, 3, 12, 0, 0, 0, lordHowe),
			[]time.Time{time.Date(2026, 10, 4, 2, 30, 0, 0, lordHowe), time.Date(2026, 10, 5, 2, 15, 0, 0, lordHowe)}},
		{"from a time in another zone", "0 3 * * *", "Europe/Berlin", time.Date(2026, 11, 30, 0, 0, 0, 0, newYork),
			[]time.Time{time.Date(2026, 12, 1, 3, 0, 0, 0, berlin)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.schedule, tt.timeZone)
			at := tt.from
			for i, want := range tt.want {
				got := s.Next(at)
				if !got.Equal(want) {
					t.Fatalf("Next #%d after %s = %s, want %s", i+1, at.UTC(), got.UTC(), want.UTC())
				}
				at = got
			}
		})
	}
}

// Next never returns a time at or before the one it was given, and never
// the same time twice, across a year of daylight saving changes in several
// zones.
func TestNextMovesForward(t *testing.T) {
	schedules := []string{"30 2 * * *", "*/15 2 * * *", "0 2,3 * * *", "@hourly", "*/20 * * * *", "0 0 * * *", "@every 45m"}
	for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "UTC"} {
		for _, schedule := range schedules {
			s := mustParse(t, schedule, tz)
			at := utc(2026, 1, 1, 0, 0, 0)
			for i := 0; i < 20000 && at.Year() < 2027; i++ {
				next := s.Next(at)
				if !next.After(at) {
					t.Fatalf("%s in %s: Next(%s) = %s, not after it", schedule, tz, at.UTC(), next.UTC())
				}
				at = next
			}
		}
	}
}
