package kit

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLongMessagesAreTruncatedOnARuneBoundary(t *testing.T) {
	g := NewWithT(t)
	out := TruncateMessage(strings.Repeat("é", MaxConditionMessage))
	g.Expect(len(out)).To(BeNumerically("<=", MaxConditionMessage))
	g.Expect(out).To(HaveSuffix("..."))
	g.Expect(strings.ToValidUTF8(out, "?")).To(Equal(out))
	g.Expect(TruncateMessage("short")).To(Equal("short"))
}

func TestMergeConditionsKeepsTransitionTimesWhileTheStatusHolds(t *testing.T) {
	g := NewWithT(t)
	earlier := metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	previous := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Old", LastTransitionTime: earlier, ObservedGeneration: 1},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "Broken", LastTransitionTime: earlier},
	}
	merged := MergeConditions(previous, 2, now,
		metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "New", Message: "m"},
		metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected"},
		metav1.Condition{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Done"})

	g.Expect(merged).To(HaveLen(3))
	ready := meta.FindStatusCondition(merged, "Ready")
	g.Expect(ready.LastTransitionTime).To(Equal(earlier), "Ready stayed True")
	g.Expect(ready.Reason).To(Equal("New"))
	g.Expect(ready.ObservedGeneration).To(Equal(int64(2)))
	g.Expect(meta.FindStatusCondition(merged, "Degraded").LastTransitionTime).To(Equal(now), "Degraded turned False")
	g.Expect(meta.FindStatusCondition(merged, "Progressing").LastTransitionTime).To(Equal(now), "new")
	g.Expect(previous[0].Reason).To(Equal("Old"), "the previous status is not changed")
}
