package backupjob

import (
	"fmt"
	"time"
)

// maxMissedEnumerated is how many scheduled times Due steps through one by
// one. Beyond it, as the built-in CronJob does above 100, it estimates how
// many were missed from the interval between the first two, and reports
// that there were too many: the operator was stopped for very long, or a
// clock jumped, and stepping through decades of @every 1s would eat the
// operator's CPU.
const maxMissedEnumerated = 100

// Due is what a BackupJob's schedule asks for at a given time.
//
// Missed-run accounting: every scheduled time after Since and not after
// Now is "due". At most one run starts for them, for the most recent one
// (Run), and only if it is not later than the starting deadline; all the
// other due times are missed. So a run that starts at its time, or late
// after an outage, is not missed; the times skipped before it are. An
// operator down across 4 scheduled times starts one catch-up run and
// counts 3 missed; across 1 it starts that run, late, and counts none.
// @every 10s with the operator stopped for 35 s, from 5 s after a run, is
// down across 4 scheduled times: one catch-up run, 3 missed.
type Due struct {
	// Run is the scheduled time of the run to start now, or the zero time
	// when none is due or the most recent due time is past the starting
	// deadline.
	Run time.Time
	// Missed is the number of due times that get no run: all of them but
	// Run. The reconciler adds it to status.missedRuns in the same status
	// write that moves lastScheduleTime or lastMissedTime past them, so a
	// retry never counts them twice.
	Missed int64
	// LastMissed is the most recent due time that gets no run, or the zero
	// time: the one before Run, or, when Run is zero, the most recent due
	// time, which then goes to status.lastMissedTime so that the next
	// computation starts after it. The MissedRuns event names it.
	LastMissed time.Time
	// TooMany is true when more than 100 times were due: Missed is then an
	// estimate, and a person should look at the clocks or set
	// startingDeadlineSeconds.
	TooMany bool
	// Next is the first scheduled time after now: status.nextScheduleTime,
	// and when to requeue.
	Next time.Time
}

// Latest is the most recent due time, whether it gets the run or is
// missed, or the zero time when none is due. While the BackupJob is
// suspended the reconciler starts nothing and writes Latest to
// status.lastMissedTime without adding to missedRuns: times skipped on
// purpose are neither caught up after resuming nor counted as missed.
func (d Due) Latest() time.Time {
	if !d.Run.IsZero() {
		return d.Run
	}
	return d.LastMissed
}

// ComputeDue says what the schedule asks for at now, given the time the
// schedule's state in status starts from, since: the later of
// status.lastScheduleTime and status.lastMissedTime, or the BackupJob's
// creation time before any run. deadline is spec.startingDeadlineSeconds
// (nil: no deadline). It follows mostRecentScheduleTime and the tooLate
// check of the built-in CronJob controller (kubernetes
// pkg/controller/cronjob), with two differences: misses are counted from
// since, not only within the deadline, so that status.missedRuns reports
// all of them; and the most recent time is found also for schedules whose
// times are unevenly spaced.
//
// It returns an error only for a schedule that matches no time within five
// years after since.
func ComputeDue(s *Schedule, since, now time.Time, deadline *time.Duration) (Due, error) {
	first := s.Next(since)
	if first.IsZero() {
		return Due{}, fmt.Errorf("spec.schedule matches no time within five years after %s", since.UTC().Format(time.RFC3339))
	}

	var (
		latest   time.Time // the most recent due time
		previous time.Time // the due time before latest
		count    int64     // how many are due
		next     = first
	)
	for !next.IsZero() && !next.After(now) && count <= maxMissedEnumerated {
		previous, latest = latest, next
		count++
		next = s.Next(next)
	}

	if !next.IsZero() && !next.After(now) {
		count, latest, previous = s.estimateDue(first, latest, now)
		next = s.Next(latest)
	}

	d := Due{Next: next, TooMany: count > maxMissedEnumerated}
	if count == 0 {
		return d, nil
	}
	if deadline != nil && latest.Add(*deadline).Before(now) {
		d.Missed = count
		d.LastMissed = latest
		return d, nil
	}
	d.Run = latest
	d.Missed = count - 1
	if d.Missed > 0 {
		d.LastMissed = previous
	}
	return d, nil
}

// estimateDue counts the due times in [first, now] from the interval
// between the first two, as the built-in CronJob does, and finds the two
// most recent ones by looking back from now over a window that doubles
// until it holds two. known is a due time already found that has another
// due time after it, so the window never needs to reach further back than
// it.
func (s *Schedule) estimateDue(first, known, now time.Time) (count int64, latest, previous time.Time) {
	interval := s.Next(first).Sub(first)
	if interval < time.Second {
		interval = time.Second
	}
	count = int64(now.Sub(first)/interval) + 1

	for window := interval; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(known) {
			from = known.Add(-time.Second) // so that known itself is seen
		}
		latest, previous = time.Time{}, time.Time{}
		for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
			previous, latest = latest, t
		}
		if !previous.IsZero() || !from.After(known.Add(-time.Second)) {
			// Never fewer than were counted one by one.
			return max(count, maxMissedEnumerated+1), latest, previous
		}
	}
}
