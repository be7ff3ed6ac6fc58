package view

import (
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions writes an object's conditions, one a line, each message
// wrapped on the lines below it: messages are the part of a status that
// says why, and too long for a column. A condition written for an older
// generation than the object's is marked: the operator has not yet acted
// on the latest spec.
func Conditions(w io.Writer, conditions []metav1.Condition, generation int64, now time.Time) {
	fmt.Fprintln(w, "Conditions:")
	if len(conditions) == 0 {
		fmt.Fprintln(w, "  none yet: the operator has not reported on this object")
		return
	}
	typeWidth := 17
	for _, c := range conditions {
		typeWidth = max(typeWidth, len(c.Type))
	}
	for _, c := range conditions {
		stale := ""
		if c.ObservedGeneration != 0 && c.ObservedGeneration < generation {
			stale = fmt.Sprintf("  (of gen. %d, not %d)", c.ObservedGeneration, generation)
		}
		fmt.Fprintf(w, "  %-*s %-7s %-24s %s%s\n", typeWidth, c.Type, c.Status, c.Reason, Age(&c.LastTransitionTime, now), stale)
		if c.Message != "" {
			fmt.Fprint(w, wrap(c.Message, "      ", Width))
		}
	}
}
