package kit

import "testing"

func TestProblemsKeepsTheFirst(t *testing.T) {
	var p Problems
	if p.Problem != nil {
		t.Fatalf("new Problems hold %v", p.Problem)
	}
	p.Report("First", "the first problem")
	p.Report("Second", "a later one")
	if p.Problem == nil || *p.Problem != (Cause{Reason: "First", Message: "the first problem"}) {
		t.Errorf("Problem = %v, want the first", p.Problem)
	}
}
