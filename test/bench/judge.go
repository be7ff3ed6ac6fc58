package main

import (
	"fmt"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// ratioTarget is issue 11's bound on operator ÷ ceiling.
const ratioTarget = 1.3

// ratioSides are one round's figures behind a ratio: the operator's (or
// the scripted client's) wait, the reference's, and the ratio of their
// times, nil unless both finished.
type ratioSides struct {
	Operator, Reference waitResult
	Ratio               *float64
}

// ratioJudgement is a ratio target judged over a run's rounds.
type ratioJudgement struct {
	// Median is the median of the rounds' ratios; nil unless every round
	// has one.
	Median *float64
	// Met is "yes" or "no" on the median; "no" as well when a round's
	// operator did not finish while its reference did; "not judged" with
	// the rounds that have nothing to compare otherwise.
	Met string
}

// judgeRatio judges a ratio target on the median of the rounds, every one
// of them complete: a round that lacks the reference's figure leaves the
// target not judged rather than decided by the other rounds. An operator
// that did not finish misses the target whatever the other rounds say.
func judgeRatio(rounds []ratioSides, bound float64) ratioJudgement {
	ratios := make([]*float64, len(rounds))
	var incomplete []string
	operatorFailed := false
	for i, r := range rounds {
		ratios[i] = r.Ratio
		why := ""
		switch {
		case r.Ratio != nil:
			continue
		case r.Operator.Target == 0:
			why = "the operator phase failed"
		case !r.Operator.ok():
			operatorFailed = true
			continue
		case !r.Reference.ok():
			why = "no ceiling figure"
		default:
			why = "no ratio"
		}
		if len(rounds) > 1 {
			why = fmt.Sprintf("round %d: %s", i+1, why)
		}
		incomplete = append(incomplete, why)
	}
	j := ratioJudgement{Median: benchkit.Median(ratios)}
	switch {
	case operatorFailed:
		j.Met = "no"
	case len(incomplete) > 0 || j.Median == nil:
		j.Met = "not judged (" + strings.Join(incomplete, "; ") + ")"
	default:
		j.Met = benchkit.YesNo(*j.Median <= bound)
	}
	return j
}

// roundSides are the sides of a ratio in every round, or in the run's own
// alone when it had no extra rounds.
func roundSides(rounds *roundsResult, sides func(roundResult) ratioSides, last ratioSides) []ratioSides {
	if rounds == nil || len(rounds.Rounds) < 2 {
		return []ratioSides{last}
	}
	out := make([]ratioSides, len(rounds.Rounds))
	for i, r := range rounds.Rounds {
		out[i] = sides(r)
	}
	return out
}

// fmtRatio shows one round's ratio with its times, or why it has none; who
// names the side compared with the reference.
func fmtRatio(who string, s ratioSides) string {
	switch {
	case s.Operator.Target == 0:
		return who + " not measured"
	case s.Ratio != nil:
		return fmt.Sprintf("%.2f× (%.2f s ÷ %.2f s)", *s.Ratio, s.Operator.Seconds, s.Reference.Seconds)
	case !s.Operator.ok():
		return who + " " + s.Operator.String()
	default:
		return "ceiling " + s.Reference.String()
	}
}

// ratioFigure shows a ratio over the rounds: their median, when there are
// several, then every round's ratio, then the last round's figure.
func ratioFigure(rounds *roundsResult, sides func(roundResult) ratioSides, lastFigure string) string {
	if rounds == nil || len(rounds.Rounds) < 2 {
		return lastFigure
	}
	pick := func(r roundResult) *float64 { return sides(r).Ratio }
	all := ratioList(rounds.Rounds, pick)
	if m := rounds.medianOf(pick); m != nil {
		return fmt.Sprintf("median %.2f× of %d rounds (%s); last round %s", *m, len(rounds.Rounds), all, lastFigure)
	}
	return fmt.Sprintf("no median of %d rounds (%s); last round %s", len(rounds.Rounds), all, lastFigure)
}

// ratioList is the rounds' ratios, in the order they ran.
func ratioList(rounds []roundResult, pick func(roundResult) *float64) string {
	parts := make([]string, len(rounds))
	for i, r := range rounds {
		parts[i] = "—"
		if v := pick(r); v != nil {
			parts[i] = fmt.Sprintf("%.2f", *v)
		}
	}
	return strings.Join(parts, ", ")
}
