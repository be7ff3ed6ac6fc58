package main

import (
	"testing"

	"example.com/platform-operator/test/bench/benchkit"
)

// The ratio targets are judged on the median of every round, each
// complete; a round without the ceiling's figure leaves them not judged,
// whatever the last round says.
func TestRatioTargetsAreJudgedOnTheMedianOfCompleteRounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	done := func(s float64) waitResult { return waitResult{Seconds: s, Reached: 10, Target: 10} }
	timedOut := waitResult{Seconds: 180, Reached: 3, Target: 10, TimedOut: true}
	// round is one round whose ceiling took 10 s (or timed out) and whose
	// operator took ratio × 10 s (or timed out).
	round := func(ceiling, operator waitResult) roundResult {
		var ratio *float64
		if ceiling.ok() && operator.ok() {
			ratio = f(benchkit.Round3(operator.Seconds / ceiling.Seconds))
		}
		return roundResult{Ceiling: ceiling, CeilingAvailable: ceiling, OperatorExist: operator, OperatorReady: operator, ExistRatio: ratio, ReadyRatio: ratio}
	}
	// run is the measuring run of the given rounds, the last of them.
	run := func(rounds ...roundResult) *runResult {
		last := rounds[len(rounds)-1]
		r := &runResult{N: 10,
			Ceiling: &ceilingResult{Exist: last.Ceiling, Available: last.CeilingAvailable},
			Burst:   &burstResult{Exist: last.OperatorExist, Ready: last.OperatorReady, ExistRatio: last.ExistRatio, ReadyRatio: last.ReadyRatio}}
		if len(rounds) > 1 {
			r.Rounds = &roundsResult{Rounds: rounds}
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		run        *runResult
		wantMet    string
		wantFigure string
	}{
		{"one round: its own ratio", run(round(done(10), done(12))), "yes", "1.20× (12.00 s ÷ 10.00 s)"},
		{"one round without the ceiling's figure: not judged", run(round(timedOut, done(12))), "not judged (no ceiling figure)",
			"ceiling timed out after 180.0 s at 3/10"},
		{"one round whose operator did not finish", run(round(done(10), timedOut)), "no", "operator timed out after 180.0 s at 3/10"},
		{"odd count: the middle one", run(round(done(10), done(12)), round(done(10), done(12.5)), round(done(10), done(15))), "yes",
			"median 1.25× of 3 rounds (1.20, 1.25, 1.50); last round 1.50× (15.00 s ÷ 10.00 s)"},
		{"even count: the mean of the middle two", run(round(done(10), done(12)), round(done(10), done(15)), round(done(10), done(13)), round(done(10), done(16))), "no",
			"median 1.40× of 4 rounds (1.20, 1.50, 1.30, 1.60); last round 1.60× (16.00 s ÷ 10.00 s)"},
		{"an earlier round's ceiling failed, the last round within the target: not judged", run(round(timedOut, done(12)), round(done(10), done(12)), round(done(10), done(12))),
			"not judged (round 1: no ceiling figure)", "no median of 3 rounds (—, 1.20, 1.20); last round 1.20× (12.00 s ÷ 10.00 s)"},
		{"an earlier round's ceiling failed, the last round over the target: not judged", run(round(timedOut, done(12)), round(done(10), done(15))),
			"not judged (round 1: no ceiling figure)", "no median of 2 rounds (—, 1.50); last round 1.50× (15.00 s ÷ 10.00 s)"},
		{"the last round's ceiling failed", run(round(done(10), done(12)), round(done(10), done(12)), round(timedOut, done(12))),
			"not judged (round 3: no ceiling figure)", "no median of 3 rounds (1.20, 1.20, —); last round ceiling timed out after 180.0 s at 3/10"},
		{"an earlier round's operator did not finish", run(round(done(10), timedOut), round(done(10), done(12)), round(done(10), done(12))),
			"no", "no median of 3 rounds (—, 1.20, 1.20); last round 1.20× (12.00 s ÷ 10.00 s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := computeChecks(&results{Runs: []*runResult{tc.run}})
			if len(checks) != 2 {
				t.Fatalf("%d checks, want the two ratio targets: %+v", len(checks), checks)
			}
			for _, c := range checks {
				if c.Met != tc.wantMet || c.Figure != tc.wantFigure {
					t.Errorf("%s: met %q, figure %q; want %q, %q", c.Target, c.Met, c.Figure, tc.wantMet, tc.wantFigure)
				}
			}
		})
	}
}
