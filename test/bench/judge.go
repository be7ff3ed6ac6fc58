package main

import (
	"fmt"
	"strings"
)

// ratioTarget is issue 11's bound on operator ÷ ceiling.
const ratioTarget = 1.3

func fmtRatio(r *float64, op, ceiling waitResult) (string, string) {
	switch {
	case op.Target == 0:
		return "operator not measured", "n/a (the operator phase failed)"
	case r != nil:
		return fmt.Sprintf("%.2f× (%.2f s ÷ %.2f s)", *r, op.Seconds, ceiling.Seconds), yesNo(*r <= ratioTarget)
	case !op.ok():
		return "operator " + op.String(), "no"
	default:
		return "ceiling " + ceiling.String(), "n/a (no ceiling figure)"
	}
}

// judgeOnMedian judges a ratio on the median of the rounds, when there are
// several, and shows the last round's figure after it. Without a median (a
// round failed or timed out) the verdict is the last round's, unless an
// extra round's operator did not finish.
func judgeOnMedian(rounds *roundsResult, pick func(roundResult) *float64, lastFigure, lastMet string) (string, string) {
	if rounds == nil || len(rounds.Rounds) < 2 {
		return lastFigure, lastMet
	}
	all := ratioList(rounds.Rounds, pick)
	m := rounds.medianOf(pick)
	if m == nil {
		for _, r := range rounds.Rounds {
			if !r.OperatorExist.ok() || !r.OperatorReady.ok() {
				lastMet = "no"
			}
		}
		return fmt.Sprintf("no median of %d rounds (%s); last round %s", len(rounds.Rounds), all, lastFigure), lastMet
	}
	return fmt.Sprintf("median %.2f× of %d rounds (%s); last round %s", *m, len(rounds.Rounds), all, lastFigure), yesNo(*m <= ratioTarget)
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
