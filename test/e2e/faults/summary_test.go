package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", []time.Duration{3 * s}, 99, 3 * s},
		{"median of an odd count", []time.Duration{5 * s, 1 * s, 3 * s}, 50, 3 * s},
		{"median of an even count: the lower", []time.Duration{4 * s, 1 * s, 2 * s, 3 * s}, 50, 2 * s},
		{"p99 of ten is the largest", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p90 of ten", []time.Duration{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 90, 9},
		{"p100 is the largest", []time.Duration{2, 7, 1}, 100, 7},
		{"p0 is the smallest", []time.Duration{2, 7, 1}, 0, 1},
	} {
		if got := Percentile(tc.ds, tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := time.Second
	ok := func(i int, k Kind, d time.Duration) Record {
		return Record{Index: i, Kind: k, Recovered: true, Recovery: Seconds(d)}
	}
	for _, tc := range []struct {
		name     string
		run      Run
		failures []string // substrings, in order
		p50, p99 time.Duration
	}{
		{
			name: "a clean run",
			run: Run{Planned: 3, Acknowledged: 900, RecoveryBound: 3 * time.Minute, Records: []Record{
				ok(1, DeletePrimary, 12*s), ok(2, KillPostgres, 4*s), ok(3, DeletePrimary, 20*s)}},
			p50: 12 * s, p99: 20 * s,
		},
		{
			name: "lost commits, first after fault 2",
			run: Run{Planned: 3, Acknowledged: 900, Lost: 17, RecoveryBound: 3 * time.Minute, Records: []Record{
				ok(1, KillManager, 2*s), func() Record { r := ok(2, DeletePrimaryAndSyncStandby, 30*s); r.LostAfter = 17; return r }(),
				func() Record { r := ok(3, DeletePrimary, 10*s); r.LostAfter = 17; return r }()}},
			failures: []string{"17 of 900 acknowledged commits lost (first missing after fault #2 delete-primary-and-sync-standby)"},
			p50:      10 * s, p99: 30 * s,
		},
		{
			name: "lost commits found at the end, the last fault not recovered",
			run: Run{Planned: 2, Acknowledged: 300, Lost: 5, RecoveryBound: time.Minute, Records: []Record{
				ok(1, KillManager, 2*s), {Index: 2, Kind: DeletePrimaryAndSyncStandby}}},
			failures: []string{"5 of 300 acknowledged commits lost (found at the final check)", "#2 delete-primary-and-sync-standby: not recovered within 1m0s"},
			p50:      2 * s, p99: 2 * s,
		},
		{
			name: "two primaries, a slow recovery, one not recovered, one not injected; the rest skipped",
			run: Run{Planned: 6, RecoveryBound: time.Minute, TwoPrimaries: []string{"[db-1 db-2] at 10:00:00.100"}, Records: []Record{
				func() Record {
					r := ok(1, PauseManager, 5*s)
					r.TwoPrimaries = []string{"[db-1 db-2] at 10:00:00.100", "[db-1 db-2] at 10:00:00.200"}
					return r
				}(),
				ok(2, CutNetwork, 2*time.Minute),
				{Index: 3, Kind: KillPostgres, Error: "no PostgreSQL server"},
				{Index: 4, Kind: StopAPIServer}}},
			failures: []string{"#3 kill-postgres: no PostgreSQL server", "#4 stop-apiserver: not recovered within 1m0s",
				"#2 cut-network: recovered in 2m0s, over the bound of 1m0s", "2 moments when two instances accepted writes"},
			p50: 5 * s, p99: 2 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := Summarize(tc.run)
			if len(sum.Failures) != len(tc.failures) {
				t.Fatalf("failures %q, want %d", sum.Failures, len(tc.failures))
			}
			for _, want := range tc.failures {
				if !slices.ContainsFunc(sum.Failures, func(f string) bool { return strings.Contains(f, want) }) {
					t.Errorf("no failure says %q: %q", want, sum.Failures)
				}
			}
			if time.Duration(sum.RecoveryP50) != tc.p50 || time.Duration(sum.RecoveryP99) != tc.p99 {
				t.Errorf("p50 %v p99 %v, want %v %v", sum.RecoveryP50, sum.RecoveryP99, tc.p50, tc.p99)
			}
			if sum.Skipped != tc.run.Planned-len(tc.run.Records) {
				t.Errorf("skipped %d", sum.Skipped)
			}
			n := 0
			for _, c := range sum.Injected {
				n += c
			}
			if n != len(tc.run.Records) {
				t.Errorf("injected %v, want %d in all", sum.Injected, len(tc.run.Records))
			}
			verdict := "PASS"
			if len(tc.failures) > 0 {
				verdict = "FAIL"
			}
			if lines := sum.Lines(); !strings.Contains(lines[0], verdict) || len(lines) != 4+len(tc.failures) {
				t.Errorf("lines %q", lines)
			}
		})
	}
}

func TestSummaryJSON(t *testing.T) {
	sum := Summarize(Run{Seed: 99, Kinds: []Kind{DeletePrimary}, Planned: 1, Acknowledged: 10, RecoveryBound: 3 * time.Minute,
		Wall: 61 * time.Second, Records: []Record{{Index: 1, Kind: DeletePrimary, Recovered: true, Recovery: Seconds(12345 * time.Millisecond)}}})
	path := filepath.Join(t.TempDir(), "faults", "summary.json")
	if err := sum.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"seed": 99`, `"recovery_p50_s": 12.3`, `"recovery_bound_s": 180`, `"wall_s": 61`, `"delete-primary": 1`, `"failures": []`, `"lost": 0`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("no %s in\n%s", want, data)
		}
	}
	var back Summary
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Seed != 99 || time.Duration(back.RecoveryP50) != 12300*time.Millisecond || back.Injected[DeletePrimary] != 1 {
		t.Errorf("read back %+v", back)
	}
}
