package faults

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Record is what became of one injected fault.
type Record struct {
	Index int  `json:"index"`
	Kind  Kind `json:"kind"`
	// Detail says what was done to which instance.
	Detail string `json:"detail"`
	// Error, when set, says why the fault could not be injected or healed.
	Error string `json:"error,omitempty"`
	// Recovered is false when the cluster was not back within the bound.
	Recovered bool `json:"recovered"`
	// Recovery runs from the end of the fault (its heal, or its injection
	// when it has none) to the cluster being back: Healthy, every
	// instance ready, the writer committing.
	Recovery Seconds `json:"recovery_s"`
	// PrimaryAfter is the primary once the cluster was back.
	PrimaryAfter string `json:"primary_after,omitempty"`
	// LostAfter counts the acknowledged commits missing from the primary
	// once the cluster was back, all faults so far together.
	LostAfter int `json:"lost_after"`
	// TwoPrimaries are the moments, from the fault's injection to its
	// check, when more than one instance accepted writes.
	TwoPrimaries []string `json:"two_primaries,omitempty"`
}

// Summary is the outcome of a run.
type Summary struct {
	Seed  uint64 `json:"seed"`
	Kinds []Kind `json:"kinds"`
	// Planned faults were scheduled; Skipped were not injected, the run
	// having stopped first (its time budget spent, or the cluster not
	// back from an earlier fault).
	Planned  int          `json:"planned"`
	Skipped  int          `json:"skipped"`
	Injected map[Kind]int `json:"injected"`
	// Acknowledged counts the commits that returned to the writer; Lost
	// those of them missing from the final primary.
	Acknowledged int      `json:"acknowledged"`
	Lost         int      `json:"lost"`
	TwoPrimaries []string `json:"two_primaries"`
	// RecoveryBound is the longest recovery that passes.
	RecoveryBound Seconds `json:"recovery_bound_s"`
	RecoveryP50   Seconds `json:"recovery_p50_s"`
	RecoveryP99   Seconds `json:"recovery_p99_s"`
	RecoveryMax   Seconds `json:"recovery_max_s"`
	Wall          Seconds `json:"wall_s"`
	// Failures say why the run failed; none when it passed.
	Failures []string `json:"failures"`
	Faults   []Record `json:"faults"`
}

// Run is what a run observed, for Summarize.
type Run struct {
	Seed          uint64
	Kinds         []Kind
	Planned       int
	Records       []Record
	Acknowledged  int
	Lost          int
	TwoPrimaries  []string
	RecoveryBound time.Duration
	Wall          time.Duration
}

// Summarize counts a run and says whether it failed: a lost acknowledged
// commit, two instances accepting writes at once, a fault not injected or
// healed, or a recovery over the bound.
func Summarize(r Run) Summary {
	s := Summary{
		Seed: r.Seed, Kinds: r.Kinds, Planned: r.Planned, Skipped: r.Planned - len(r.Records),
		Injected: map[Kind]int{}, Acknowledged: r.Acknowledged, Lost: r.Lost,
		TwoPrimaries: append([]string{}, r.TwoPrimaries...), RecoveryBound: Seconds(r.RecoveryBound), Wall: Seconds(r.Wall),
		Failures: []string{}, Faults: append([]Record{}, r.Records...),
	}
	var recoveries []time.Duration
	for _, rec := range r.Records {
		s.Injected[rec.Kind]++
		s.TwoPrimaries = append(s.TwoPrimaries, rec.TwoPrimaries...)
		switch {
		case rec.Error != "":
			s.Failures = append(s.Failures, fmt.Sprintf("fault #%d %s: %s", rec.Index, rec.Kind, rec.Error))
		case !rec.Recovered:
			s.Failures = append(s.Failures, fmt.Sprintf("fault #%d %s: not recovered within %s", rec.Index, rec.Kind, r.RecoveryBound))
		default:
			recoveries = append(recoveries, time.Duration(rec.Recovery))
			if time.Duration(rec.Recovery) > r.RecoveryBound {
				s.Failures = append(s.Failures, fmt.Sprintf("fault #%d %s: recovered in %s, over the bound of %s", rec.Index, rec.Kind, time.Duration(rec.Recovery), r.RecoveryBound))
			}
		}
	}
	slices.Sort(s.TwoPrimaries)
	s.TwoPrimaries = slices.Compact(s.TwoPrimaries)
	if s.Lost > 0 {
		when := "found at the final check"
		for _, rec := range r.Records {
			if rec.LostAfter > 0 {
				when = fmt.Sprintf("first missing after fault #%d %s", rec.Index, rec.Kind)
				break
			}
		}
		s.Failures = append(s.Failures, fmt.Sprintf("%d of %d acknowledged commits lost (%s)", s.Lost, s.Acknowledged, when))
	}
	if len(s.TwoPrimaries) > 0 {
		s.Failures = append(s.Failures, fmt.Sprintf("%d moments when two instances accepted writes", len(s.TwoPrimaries)))
	}
	s.RecoveryP50 = Seconds(Percentile(recoveries, 50))
	s.RecoveryP99 = Seconds(Percentile(recoveries, 99))
	s.RecoveryMax = Seconds(Percentile(recoveries, 100))
	return s
}

// Percentile is the p-th percentile of ds by the nearest rank: the
// smallest value that at least p percent of ds do not exceed; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Lines says the summary in a few lines, for the test's log.
func (s Summary) Lines() []string {
	var kinds []string
	for _, k := range AllKinds {
		if n := s.Injected[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	verdict := "PASS"
	if len(s.Failures) > 0 {
		verdict = "FAIL"
	}
	lines := []string{
		fmt.Sprintf("fault injection %s: seed %d, %d of %d faults injected in %s", verdict, s.Seed, s.Planned-s.Skipped, s.Planned, s.Wall),
		"faults by kind: " + strings.Join(kinds, ", "),
		fmt.Sprintf("commits acknowledged %d, lost %d; moments with two primaries %d", s.Acknowledged, s.Lost, len(s.TwoPrimaries)),
		fmt.Sprintf("time to recover p50 %s, p99 %s, max %s (bound %s)", s.RecoveryP50, s.RecoveryP99, s.RecoveryMax, s.RecoveryBound),
	}
	for _, f := range s.Failures {
		lines = append(lines, "failure: "+f)
	}
	return lines
}

// WriteJSON writes the summary to path, making its folder.
func (s Summary) WriteJSON(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the fault summary: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write the fault summary: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the fault summary: %w", err)
	}
	return nil
}

// Seconds is a duration that JSON and the summary's lines say in seconds,
// to a tenth.
type Seconds time.Duration

func (d Seconds) String() string {
	return time.Duration(d).Round(100 * time.Millisecond).String()
}

// MarshalJSON writes d as a number of seconds.
func (d Seconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(math.Round(time.Duration(d).Seconds()*10) / 10)
}

// UnmarshalJSON reads a number of seconds.
func (d *Seconds) UnmarshalJSON(data []byte) error {
	var s float64
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a duration in seconds: %w", err)
	}
	*d = Seconds(time.Duration(s * float64(time.Second)))
	return nil
}
