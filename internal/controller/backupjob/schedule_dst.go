package backupjob

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Daylight saving changes, for schedules with fixed hours such as
// "30 2 * * *" (daily at 02:30).
//
// The cron library, and with it the built-in CronJob, steps through the
// wall-clock times that exist: on the night the clock jumps from 02:00 to
// 03:00 a 02:30 schedule does not run at all, and on the night it falls
// back from 03:00 to 02:00 it runs twice, an hour apart. For a daily backup
// that is a day without a backup, silently, once a year. Here such a
// schedule follows the wall clock the way Vixie cron does:
//
//   - a time the clock skips runs when the clock jumps (02:30 runs at 03:00
//     daylight saving time), once even if the schedule matches several
//     skipped times;
//   - a time the clock repeats runs once, at its first occurrence.
//
// Schedules that match every hour (@hourly, "*/15 * * * *") and @every
// follow elapsed time instead, as in Vixie cron: they get no run for the
// hour that does not exist, and run in the repeated hour as in any other.

// everyHour has the bits of hours 0 to 23 set, as in cron.SpecSchedule.Hour.
const everyHour = 1<<24 - 1

func matchesEveryHour(s *cron.SpecSchedule) bool {
	return s.Hour&everyHour == everyHour
}

// nextOnWallClock is Next for schedules with fixed hours.
func (s *Schedule) nextOnWallClock(t time.Time) time.Time {
	for {
		next := s.cron.Next(t)
		if jump := s.skippedMatch(t, next); !jump.IsZero() {
			return jump.In(t.Location())
		}
		if next.IsZero() || !s.repeated(next) {
			return next
		}
		t = next
	}
}

// skippedMatch returns the first moment after t and not after until (or
// within five years when until is zero) at which the clock jumps forward
// over a wall-clock time that the schedule matches, or the zero time.
func (s *Schedule) skippedMatch(t, until time.Time) time.Time {
	if until.IsZero() {
		until = t.AddDate(5, 0, 0)
	}
	for x := t.In(s.loc); ; {
		_, end := x.ZoneBounds()
		if end.IsZero() || end.After(until) {
			return time.Time{}
		}
		_, before := end.Add(-time.Nanosecond).Zone()
		_, after := end.Zone()
		if after > before {
			// The wall clock reads from..from+gap never: for example 02:00
			// to 03:00 when it jumps from CET to CEST.
			from := wallTime(end.In(time.FixedZone("", before)))
			gap := time.Duration(after-before) * time.Second
			if m := s.wall.Next(from.Add(-time.Second)); !m.IsZero() && m.Before(from.Add(gap)) {
				return end
			}
		}
		x = end
	}
}

// repeated reports whether t is the second occurrence of its wall-clock
// time: within the hour (or whatever the change is) after the clock fell
// back.
func (s *Schedule) repeated(t time.Time) bool {
	t = t.In(s.loc)
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	_, now := t.Zone()
	return before > now && t.Sub(start) < time.Duration(before-now)*time.Second
}

// wallTime is the time that t's clock shows, as the same reading in UTC, so
// that a schedule read in UTC matches what the local clock would show.
func wallTime(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}
