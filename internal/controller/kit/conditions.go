package kit

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxConditionMessage bounds the messages that status conditions copy from
// pods and API errors, so that one noisy container cannot bloat every list
// of the operator's resources.
const MaxConditionMessage = 1024

// MergeConditions returns conditions stamped with generation, keeping the
// lastTransitionTime of those whose status did not change since previous
// (meta.SetStatusCondition's rule) and now for the others. Status is
// computed from what was observed; previous is read only for these times.
func MergeConditions(previous []metav1.Condition, generation int64, now metav1.Time, conditions ...metav1.Condition) []metav1.Condition {
	merged := make([]metav1.Condition, 0, len(conditions))
	for _, c := range conditions {
		if old := meta.FindStatusCondition(previous, c.Type); old != nil {
			merged = append(merged, *old)
		}
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&merged, c)
	}
	return merged
}

// TruncateMessage shortens message to MaxConditionMessage bytes, on a rune
// boundary.
func TruncateMessage(message string) string {
	if len(message) <= MaxConditionMessage {
		return message
	}
	cut := MaxConditionMessage - len("...")
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "..."
}
