package backupjob

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dnsLabel is what a Job name must be for its pods' job-name label, and
// what every claim and snapshot name satisfies.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestRunName(t *testing.T) {
	at := utc(2026, 11, 30, 2, 30, 0)  // Unix 1796005800
	longest := strings.Repeat("b", 52) // the longest name the CRD allows
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"name and Unix seconds", RunName("nightly", at), "nightly-1796005800"},
		{"seconds tell @every 10s runs apart", RunName("nightly", at.Add(10*time.Second)), "nightly-1796005810"},
		{"the longest allowed name fits", RunName(longest, at), longest + "-1796005800"},
		{"the drill", DrillName("nightly", at), "nightly-1796005800-verify"},
		{"a long name's drill is shortened with a hash", DrillName(longest, at), strings.Repeat("b", 36) + "-" + fnvHex(longest) + "-1796005800-verify"},
		{"a name too long for the CRD still fits", RunName(strings.Repeat("c", 60), at), strings.Repeat("c", 43) + "-" + fnvHex(strings.Repeat("c", 60)) + "-1796005800"},
		{"no '-' before the hash", RunName(strings.Repeat("d", 42)+"-"+strings.Repeat("e", 10), at), strings.Repeat("d", 42) + "-" + fnvHex(strings.Repeat("d", 42)+"-"+strings.Repeat("e", 10)) + "-1796005800"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
			if len(tt.got) > 63 || !dnsLabel.MatchString(tt.got) {
				t.Errorf("%q is not a DNS label of at most 63 characters", tt.got)
			}
		})
	}
}

func TestRunNamesOfLongNamesWithTheSamePrefixDiffer(t *testing.T) {
	at := utc(2026, 11, 30, 2, 30, 0)
	a, b := strings.Repeat("a", 50)+"-x", strings.Repeat("a", 50)+"-y"
	if DrillName(a, at) == DrillName(b, at) {
		t.Fatalf("%q and %q have the same drill name %q", a, b, DrillName(a, at))
	}
}

// A run's name is the same in every time zone and for every monotonic
// reading: it depends on the instant only.
func TestRunNameDependsOnTheInstantOnly(t *testing.T) {
	at := utc(2026, 11, 30, 2, 30, 0)
	if got := RunName("x", at.In(mustLoad(t, "Asia/Kolkata"))); got != RunName("x", at) {
		t.Fatalf("%q differs from %q", got, RunName("x", at))
	}
}

func fnvHex(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}
