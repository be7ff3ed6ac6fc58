package backupjob

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestComputeDue(t *testing.T) {
	T := utc(2026, 11, 30, 10, 0, 0) // a run's scheduled time, or the creation time
	berlin := func(y int, m time.Month, d, h, min int) time.Time {
		return time.Date(y, m, d, h, min, 0, 0, mustLoad(t, "Europe/Berlin"))
	}
	tests := []struct {
		name               string
		schedule, timeZone string
		since, now         time.Time
		deadline           *time.Duration
		want               Due
	}{
		{"nothing due yet", "@hourly", "", T, T.Add(30 * time.Minute), nil,
			Due{Next: T.Add(time.Hour)}},
		{"due exactly now", "@hourly", "", T, T.Add(time.Hour), nil,
			Due{Run: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"due, on time", "@hourly", "", T, T.Add(time.Hour + 200*time.Millisecond), nil,
			Due{Run: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"one due, late: a late run is not a missed one", "@hourly", "", T, T.Add(time.Hour + 40*time.Minute), nil,
			Due{Run: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"down across 3: one run for the latest, 2 missed", "@hourly", "", T, T.Add(3*time.Hour + 10*time.Minute), nil,
			Due{Run: T.Add(3 * time.Hour), Missed: 2, LastMissed: T.Add(2 * time.Hour), Next: T.Add(4 * time.Hour)}},
		{"every 10s, down 35 s from 5 s after a run: 4 due, 1 run, 3 missed", "@every 10s", "", T, T.Add(40*time.Second + 500*time.Millisecond), nil,
			Due{Run: T.Add(40 * time.Second), Missed: 3, LastMissed: T.Add(30 * time.Second), Next: T.Add(50 * time.Second)}},
		{"every 10s, down 35 s from 1 s after a run: 3 due, 1 run, 2 missed", "@every 10s", "", T, T.Add(36*time.Second + 500*time.Millisecond), nil,
			Due{Run: T.Add(30 * time.Second), Missed: 2, LastMissed: T.Add(20 * time.Second), Next: T.Add(40 * time.Second)}},
		{"within the starting deadline", "@hourly", "", T, T.Add(time.Hour + 5*time.Minute), ptr.To(10 * time.Minute),
			Due{Run: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"exactly at the starting deadline", "@hourly", "", T, T.Add(time.Hour + 10*time.Minute), ptr.To(10 * time.Minute),
			Due{Run: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"past the starting deadline: not run, missed", "@hourly", "", T, T.Add(time.Hour + 10*time.Minute + time.Second), ptr.To(10 * time.Minute),
			Due{Missed: 1, LastMissed: T.Add(time.Hour), Next: T.Add(2 * time.Hour)}},
		{"down across 3, the latest past the deadline: all 3 missed", "@hourly", "", T, T.Add(3*time.Hour + 30*time.Minute), ptr.To(10 * time.Minute),
			Due{Missed: 3, LastMissed: T.Add(3 * time.Hour), Next: T.Add(4 * time.Hour)}},
		{"down across 3, the latest within the deadline", "@hourly", "", T, T.Add(3*time.Hour + 5*time.Minute), ptr.To(10 * time.Minute),
			Due{Run: T.Add(3 * time.Hour), Missed: 2, LastMissed: T.Add(2 * time.Hour), Next: T.Add(4 * time.Hour)}},
		{"since in the future (a clock that jumped back)", "@hourly", "", T.Add(5 * time.Hour), T, nil,
			Due{Next: T.Add(6 * time.Hour)}},

		{"100 due: counted one by one", "* * * * *", "", T, T.Add(100 * time.Minute), nil,
			Due{Run: T.Add(100 * time.Minute), Missed: 99, LastMissed: T.Add(99 * time.Minute), Next: T.Add(101 * time.Minute)}},
		{"101 due: too many", "* * * * *", "", T, T.Add(101 * time.Minute), nil,
			Due{Run: T.Add(101 * time.Minute), Missed: 100, LastMissed: T.Add(100 * time.Minute), TooMany: true, Next: T.Add(102 * time.Minute)}},
		{"a day of minutes: too many, counted exactly for a regular schedule", "* * * * *", "", T, T.Add(24*time.Hour + 30*time.Second), nil,
			Due{Run: T.Add(24 * time.Hour), Missed: 1439, LastMissed: T.Add(24*time.Hour - time.Minute), TooMany: true, Next: T.Add(24*time.Hour + time.Minute)}},
		{"every second, 30 years of a wrong clock", "@every 1s", "", utc(1996, 11, 30, 10, 0, 0), T, nil,
			Due{Run: T, Missed: int64(T.Sub(utc(1996, 11, 30, 10, 0, 0))/time.Second) - 1, LastMissed: T.Add(-time.Second), TooMany: true, Next: T.Add(time.Second)}},
		{"too many, past the deadline", "* * * * *", "", T, T.Add(24*time.Hour + 2*time.Minute + 30*time.Second), ptr.To(10 * time.Second),
			Due{Missed: 1442, LastMissed: T.Add(24*time.Hour + 2*time.Minute), TooMany: true, Next: T.Add(24*time.Hour + 3*time.Minute)}},
		// 06:30, 10:30 and 14:30 on weekdays. From Monday 5 January to
		// Monday 2 March, 05:00: 8 weeks of 15, more than 100. The built-in
		// CronJob looks back one interval (4 hours) from now, finds nothing
		// and starts no run; here the window widens to Friday 14:30.
		{"too many, unevenly spaced: the most recent is still found", "30 6-16/4 * * 1-5", "", utc(2026, 1, 5, 0, 0, 0), utc(2026, 3, 2, 5, 0, 0), nil,
			Due{Run: utc(2026, 2, 27, 14, 30, 0), Missed: int64(utc(2026, 3, 2, 5, 0, 0).Sub(utc(2026, 1, 5, 6, 30, 0))/(4*time.Hour)) + 1 - 1, LastMissed: utc(2026, 2, 27, 10, 30, 0), TooMany: true, Next: utc(2026, 3, 2, 6, 30, 0)}},

		{"daily 02:30 in Berlin, spring: caught at the jump", "30 2 * * *", "Europe/Berlin", berlin(2026, 3, 28, 2, 30), utc(2026, 3, 29, 1, 0, 5), nil,
			Due{Run: utc(2026, 3, 29, 1, 0, 0), Next: utc(2026, 3, 30, 0, 30, 0)}},
		{"daily 02:30 in Berlin, autumn: due once, not again an hour later", "30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 30, 0), utc(2026, 10, 25, 1, 30, 5), nil,
			Due{Next: utc(2026, 10, 26, 1, 30, 0)}},
		{"daily 02:30 in Berlin, down across both changes of the year", "30 2 * * *", "Europe/Berlin", berlin(2026, 3, 1, 2, 30), berlin(2026, 11, 1, 12, 0), nil,
			// March 2..31 (30) + April..October (30+31+30+31+31+30+31) + November 1
			Due{Run: berlin(2026, 11, 1, 2, 30), Missed: 30 + 214 + 1 - 1, LastMissed: berlin(2026, 10, 31, 2, 30), TooMany: true, Next: berlin(2026, 11, 2, 2, 30)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ComputeDue(mustParse(t, tt.schedule, tt.timeZone), tt.since, tt.now, tt.deadline)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Run.Equal(tt.want.Run) || got.Missed != tt.want.Missed || !got.LastMissed.Equal(tt.want.LastMissed) ||
				got.TooMany != tt.want.TooMany || !got.Next.Equal(tt.want.Next) {
				t.Errorf("got  %s\nwant %s", formatDue(got), formatDue(tt.want))
			}
		})
	}
}

func formatDue(d Due) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("run %s missed %d lastMissed %s tooMany %t next %s", f(d.Run), d.Missed, f(d.LastMissed), d.TooMany, f(d.Next))
}

func TestComputeDueRefusesASchedulePastItsLastTime(t *testing.T) {
	// February 29 of 2100 does not exist: from March 2097 the next one is
	// in 2104, beyond the five years the cron library looks ahead.
	s := mustParse(t, "0 0 29 2 *", "")
	if _, err := ComputeDue(s, utc(2097, 3, 1, 0, 0, 0), utc(2098, 1, 1, 0, 0, 0), nil); err == nil {
		t.Fatal("want an error for a schedule with no time within five years")
	}
}

func TestDueLatest(t *testing.T) {
	T := utc(2026, 11, 30, 10, 0, 0)
	tests := []struct {
		name string
		due  Due
		want time.Time
	}{
		{"nothing due", Due{Next: T}, time.Time{}},
		{"a run", Due{Run: T, Missed: 2, Next: T.Add(time.Hour)}, T},
		{"missed past the deadline", Due{Missed: 3, LastMissed: T, Next: T.Add(time.Hour)}, T},
	}
	for _, tt := range tests {
		if got := tt.due.Latest(); !got.Equal(tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// operator is the part of a reconciler that keeps schedule state in status,
// enough to replay outages on a fake clock: it reads the time from its
// clock, starts at most the one run ComputeDue asks for, and writes
// lastScheduleTime, lastMissedTime and missedRuns as the reconciler will.
type operator struct {
	clock    clock.Clock
	schedule *Schedule
	deadline *time.Duration
	created  time.Time
	suspend  bool

	lastScheduleTime, lastMissedTime time.Time
	missedRuns                       int64
	runs                             []time.Time
}

// reconcile handles the BackupJob once and returns when to requeue.
func (o *operator) reconcile(t *testing.T) time.Time {
	t.Helper()
	since := o.created
	if o.lastScheduleTime.After(since) {
		since = o.lastScheduleTime
	}
	if o.lastMissedTime.After(since) {
		since = o.lastMissedTime
	}
	d, err := ComputeDue(o.schedule, since, o.clock.Now(), o.deadline)
	if err != nil {
		t.Fatal(err)
	}
	if o.suspend {
		if latest := d.Latest(); !latest.IsZero() {
			o.lastMissedTime = latest
		}
		return d.Next
	}
	if !d.Run.IsZero() {
		o.runs = append(o.runs, d.Run)
		o.lastScheduleTime = d.Run
	} else if !d.LastMissed.IsZero() {
		o.lastMissedTime = d.LastMissed
	}
	o.missedRuns += d.Missed
	return d.Next
}

// runFor lets the operator handle the BackupJob whenever it asked to be
// requeued (100 ms late, as controller-runtime would be), until the clock
// reaches end.
func (o *operator) runFor(t *testing.T, c *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	end := c.Now().Add(d)
	for {
		next := o.reconcile(t)
		if wake := next.Add(100 * time.Millisecond); !wake.After(end) {
			c.SetTime(wake)
			continue
		}
		c.SetTime(end)
		return
	}
}

func TestOutagesOnAFakeClock(t *testing.T) {
	created := utc(2026, 11, 30, 12, 0, 0)
	tests := []struct {
		name     string
		deadline *time.Duration
		// The operator runs from the creation for 30.1 s (runs at +10,
		// +20, +30), is stopped for down after stopAfter more, then runs
		// for 25 s.
		stopAfter, down time.Duration
		wantRuns        []time.Duration // scheduled times, after created
		wantMissed      int64
	}{
		{"stopped 35 s, 5 s after a run: one catch-up run, 3 missed", nil, 5 * time.Second, 35 * time.Second,
			[]time.Duration{10, 20, 30, 70, 80, 90}, 3},
		{"stopped 35 s, at once after a run: one catch-up run, 2 missed", nil, 0, 35 * time.Second,
			[]time.Duration{10, 20, 30, 60, 70, 80, 90}, 2},
		{"stopped 8 s: the run is late, not missed", nil, 5 * time.Second, 8 * time.Second,
			[]time.Duration{10, 20, 30, 40, 50, 60}, 0},
		{"stopped 35 s, back within the 5 s deadline", ptr.To(5 * time.Second), 5 * time.Second, 35 * time.Second,
			[]time.Duration{10, 20, 30, 70, 80, 90}, 3},
		{"stopped 42 s, back past the 5 s deadline: no catch-up, each miss counted once", ptr.To(5 * time.Second), 5 * time.Second, 42 * time.Second,
			[]time.Duration{10, 20, 30, 80, 90, 100}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktesting.NewFakeClock(created)
			o := &operator{clock: c, schedule: mustParse(t, "@every 10s", ""), deadline: tt.deadline, created: created}
			o.runFor(t, c, 30*time.Second+100*time.Millisecond+tt.stopAfter)
			c.Step(tt.down)
			o.runFor(t, c, 25*time.Second)

			var want []time.Time
			for _, d := range tt.wantRuns {
				want = append(want, created.Add(d*time.Second))
			}
			if len(o.runs) != len(want) {
				t.Fatalf("runs at %v, want %v", o.runs, want)
			}
			for i := range want {
				if !o.runs[i].Equal(want[i]) {
					t.Fatalf("runs at %v, want %v", o.runs, want)
				}
			}
			if o.missedRuns != tt.wantMissed {
				t.Errorf("missedRuns = %d, want %d", o.missedRuns, tt.wantMissed)
			}
		})
	}
}

// Times that pass while suspended are skipped: not caught up on resuming,
// not counted as missed.
func TestSuspendOnAFakeClock(t *testing.T) {
	created := utc(2026, 11, 30, 12, 0, 0)
	c := clocktesting.NewFakeClock(created)
	o := &operator{clock: c, schedule: mustParse(t, "@every 10s", ""), created: created}
	o.runFor(t, c, 35*time.Second)
	o.suspend = true
	o.runFor(t, c, 30*time.Second)
	o.suspend = false
	o.runFor(t, c, 26*time.Second)

	want := []time.Time{created.Add(10 * time.Second), created.Add(20 * time.Second), created.Add(30 * time.Second),
		created.Add(70 * time.Second), created.Add(80 * time.Second), created.Add(90 * time.Second)}
	if len(o.runs) != len(want) {
		t.Fatalf("runs at %v, want %v", o.runs, want)
	}
	for i := range want {
		if !o.runs[i].Equal(want[i]) {
			t.Fatalf("runs at %v, want %v", o.runs, want)
		}
	}
	if o.missedRuns != 0 {
		t.Errorf("missedRuns = %d, want 0", o.missedRuns)
	}
}
