package faults

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fault is one fault of a schedule.
type Fault struct {
	// Index counts from 1 in the schedule.
	Index int
	Kind  Kind
	// Target is the role of the instance it picks (NoInstance for the
	// control plane); Pick chooses among the instances of that role, in
	// the order of their names, modulo their number when it is injected.
	Target Target
	Pick   int
	// GraceSeconds is the grace period of the pods it deletes.
	GraceSeconds int64
	// Hold is how long it lasts before it is healed, zero for none.
	Hold time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("#%d %s", f.Index, f.Kind)
	if f.Target != NoInstance {
		s += fmt.Sprintf(" (%s %d)", f.Target, f.Pick)
	}
	if specs[f.Kind].grace {
		s += fmt.Sprintf(" grace %ds", f.GraceSeconds)
	}
	if f.Hold > 0 {
		s += fmt.Sprintf(" for %s", f.Hold)
	}
	return s
}

// Schedule draws count faults of kinds from seed: the same seed, count and
// kinds give the same schedule, so that a failed run can be replayed. The
// faults come in rounds, each a shuffle of every kind, so that a run of at
// least len(kinds) faults injects each kind at least once.
func Schedule(seed uint64, count int, kinds []Kind) ([]Fault, error) {
	if count < 0 {
		return nil, fmt.Errorf("a negative count of faults: %d", count)
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("no fault kind to schedule")
	}
	for _, k := range kinds {
		if _, ok := specs[k]; !ok {
			return nil, fmt.Errorf("unknown fault kind %q", k)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	faults := make([]Fault, 0, count)
	var round []Kind
	for len(faults) < count {
		if len(round) == 0 {
			round = append([]Kind(nil), kinds...)
			r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		faults = append(faults, draw(r, len(faults)+1, kind))
	}
	return faults, nil
}

// draw fills in one fault of kind. It draws the same number of values
// whatever the kind, so that a kind's own draws do not shift the others'.
func draw(r *rand.Rand, index int, kind Kind) Fault {
	s := specs[kind]
	f := Fault{Index: index, Kind: kind, Target: s.target}
	primary, pick, grace, hold := r.IntN(3) == 0, r.IntN(2), r.Int64N(2), r.Float64()
	if f.Target == Any {
		// One instance in three is the primary.
		f.Target = Standby
		if primary {
			f.Target = Primary
		}
	}
	if f.Target == Standby {
		f.Pick = pick
	}
	if s.grace {
		f.GraceSeconds = grace
	}
	if s.maxHold > 0 {
		f.Hold = (s.minHold + time.Duration(hold*float64(s.maxHold-s.minHold))).Round(100 * time.Millisecond)
	}
	return f
}
