package scale

import (
	"slices"
	"sync"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

// run is one run of a schedule as this program's watch saw its object (a
// BackupJob's claim or snapshot, or a CronJob's Job).
type run struct {
	// Owner is the BackupJob or CronJob whose run it is, Name the object.
	Owner, Name string
	// Scheduled is the time the run was scheduled for, from the object's
	// annotation.
	Scheduled time.Time
	// Seen is when the watch first saw the object; Created its
	// creationTimestamp (whole seconds).
	Seen, Created time.Time
	// Succeeded is when the watch first saw the run succeed (a snapshot
	// ready to use, a claim labelled Succeeded); Deleted when it first saw
	// the object being deleted. Zero until then.
	Succeeded, Deleted time.Time
	// EarlyDeletion is set when the object was deleted while its owner had
	// fewer than keepLast newer successful backups, as the watch saw them.
	EarlyDeletion bool
}

// ledger holds the runs of one kind of object, by name.
type ledger struct {
	mu   sync.Mutex
	runs map[string]*run
	// keepLast, when above 0, checks each deletion against retention.
	keepLast int
}

func newLedger(keepLast int) *ledger { return &ledger{runs: map[string]*run{}, keepLast: keepLast} }

// observe records what the watch saw of a run's object at now: its first
// sight, its success, its deletion.
func (l *ledger) observe(name, owner string, scheduled, created time.Time, succeeded, deleting bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.runs[name]
	if !ok {
		r = &run{Owner: owner, Name: name, Scheduled: scheduled, Seen: now, Created: created}
		l.runs[name] = r
	}
	if succeeded && r.Succeeded.IsZero() {
		r.Succeeded = now
	}
	if deleting && r.Deleted.IsZero() {
		r.Deleted = now
		if l.keepLast > 0 {
			r.EarlyDeletion = newerSucceeded(l.runs, r) < l.keepLast
		}
	}
}

// newerSucceeded counts the owner's runs scheduled after r that had
// succeeded and were not deleted: the backups that retention keeps in r's
// place.
func newerSucceeded(runs map[string]*run, r *run) int {
	n := 0
	for _, o := range runs {
		if o.Owner == r.Owner && o.Scheduled.After(r.Scheduled) && !o.Succeeded.IsZero() && o.Deleted.IsZero() {
			n++
		}
	}
	return n
}

// snapshot copies the runs.
func (l *ledger) snapshot() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]run, 0, len(l.runs))
	for _, r := range l.runs {
		out = append(out, *r)
	}
	return out
}

// seenAt counts the runs scheduled at t.
func (l *ledger) seenAt(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.runs {
		if r.Scheduled.Equal(t) {
			n++
		}
	}
	return n
}

// Tally is what the runs of a window say against the schedule: every owner
// due once at every scheduled time.
type Tally struct {
	// Expected is owners × scheduled times; Runs the runs seen for them.
	Expected int `json:"expected"`
	Runs     int `json:"runs"`
	// Missed are the (owner, time) pairs with no run; Doubled the pairs
	// with more than one (each extra run counts once); Unexpected runs
	// scheduled inside the window at a time that is not due.
	Missed     int `json:"missed"`
	Doubled    int `json:"doubled"`
	Unexpected int `json:"unexpected"`
	// Lateness is seen − scheduled, in seconds, of the first run of each
	// pair; CreatedLateness the same from creationTimestamp, which has
	// whole seconds only.
	Lateness        benchkit.Distribution `json:"latenessSeconds"`
	CreatedLateness benchkit.Distribution `json:"createdLatenessSeconds"`
	// Samples are the lateness values, for the chart; not in results.json.
	Samples []float64 `json:"-"`
}

// tally judges runs against owners each due at every one of times (sorted).
// Runs scheduled outside [times[0], times[last]] are not the window's.
func tally(runs []run, owners []string, times []time.Time) Tally {
	t := Tally{Expected: len(owners) * len(times)}
	if len(times) == 0 {
		return t
	}
	first, last := times[0], times[len(times)-1]
	due := map[time.Time]bool{}
	for _, at := range times {
		due[at.UTC()] = true
	}
	isOwner := map[string]bool{}
	for _, o := range owners {
		isOwner[o] = true
	}
	type pair struct {
		owner string
		at    time.Time
	}
	byPair := map[pair][]run{}
	for _, r := range runs {
		if !isOwner[r.Owner] || r.Scheduled.Before(first) || r.Scheduled.After(last) {
			continue
		}
		if !due[r.Scheduled.UTC()] {
			t.Unexpected++
			continue
		}
		p := pair{r.Owner, r.Scheduled.UTC()}
		byPair[p] = append(byPair[p], r)
	}
	var late, created []float64
	for _, o := range owners {
		for _, at := range times {
			rs := byPair[pair{o, at.UTC()}]
			switch {
			case len(rs) == 0:
				t.Missed++
				continue
			case len(rs) > 1:
				t.Doubled += len(rs) - 1
			}
			slices.SortFunc(rs, func(a, b run) int { return a.Seen.Compare(b.Seen) })
			t.Runs += len(rs)
			late = append(late, rs[0].Seen.Sub(rs[0].Scheduled).Seconds())
			if !rs[0].Created.IsZero() {
				created = append(created, rs[0].Created.Sub(rs[0].Scheduled).Seconds())
			}
		}
	}
	t.Lateness = benchkit.Summarize(late)
	t.CreatedLateness = benchkit.Summarize(created)
	t.Samples = late
	return t
}

// takenOver is the time from stop until every owner's run scheduled at at
// was seen: how long a restarted operator took to start the runs it owed
// first. Owners with no such run leave it short of its target.
func takenOver(runs []run, owners []string, at, stop time.Time) Wait {
	w := Wait{Target: len(owners)}
	isOwner := map[string]bool{}
	for _, o := range owners {
		isOwner[o] = true
	}
	first := map[string]time.Time{}
	for _, r := range runs {
		if !isOwner[r.Owner] || !r.Scheduled.Equal(at) {
			continue
		}
		if seen, ok := first[r.Owner]; !ok || r.Seen.Before(seen) {
			first[r.Owner] = r.Seen
		}
	}
	last := stop
	for _, seen := range first {
		if seen.After(last) {
			last = seen
		}
	}
	w.Reached = len(first)
	w.TimedOut = w.Reached < w.Target
	w.Seconds = benchkit.Round3(last.Sub(stop).Seconds())
	return w
}

// minutes are the n scheduled times of a every-minute schedule from first.
func minutes(first time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = first.Add(time.Duration(i) * time.Minute)
	}
	return out
}

// nextMinute is the first whole minute at least margin after now.
func nextMinute(now time.Time, margin time.Duration) time.Time {
	return now.Add(margin).Truncate(time.Minute).Add(time.Minute)
}
