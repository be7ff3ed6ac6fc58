package pgbench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseTxLog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		log     string
		want    txLog
		wantErr string
	}{
		{name: "latency is the third field, not time_us",
			log:  "0 1 7625 0 1796637674 479650\n0 2 3918 0 1796637674 483576\n",
			want: txLog{LatenciesUs: []float64{7625, 3918}}},
		{name: "schedule lag and retries follow",
			log:  "3 7 1200 0 1796637674 100 15 0\n",
			want: txLog{LatenciesUs: []float64{1200}}},
		{name: "failed and skipped are counted, not timed",
			log:  "0 1 failed 0 1796637674 1\n0 2 skipped 0 1796637674 2\n1 1 50 0 1796637674 3\n\n",
			want: txLog{LatenciesUs: []float64{50}, Failed: 1, Skipped: 1}},
		{name: "too few fields", log: "0 1 7625\n", wantErr: "x:1: 3 fields"},
		{name: "latency not a number", log: "0 1 7625 0 1 2\n0 2 abc 0 1 2\n", wantErr: `x:2: latency "abc"`},
		{name: "negative latency", log: "0 1 -5 0 1 2\n", wantErr: `latency "-5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got txLog
			err := parseTxLog(strings.NewReader(tc.log), "x", &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Every thread's file of the run's folder is read.
func TestReadTxLogsReadsEveryThread(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{logPrefix + ".123": "0 1 1000 0 1 2\n", logPrefix + ".123.1": "1 1 3000 0 1 2\n", "other": "not a log"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readTxLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.LatenciesUs) != 2 {
		t.Fatalf("got %v, want the latencies of both threads", got.LatenciesUs)
	}
	if _, err := readTxLogs(t.TempDir()); err == nil {
		t.Fatal("a run without logs must fail")
	}
}

func TestSummarizeLatency(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100-i) * 1000 // 100 ms down to 1 ms
	}
	for _, tc := range []struct {
		name   string
		log    txLog
		want   Latency
		wantOK bool
	}{
		{name: "none", log: txLog{Failed: 3}},
		{name: "one", log: txLog{LatenciesUs: []float64{1500}}, wantOK: true,
			want: Latency{Transactions: 1, MeanMs: 1.5, P50Ms: 1.5, P99Ms: 1.5, MaxMs: 1.5}},
		{name: "nearest rank of a hundred, in any order", log: txLog{LatenciesUs: hundred}, wantOK: true,
			want: Latency{Transactions: 100, MeanMs: 50.5, P50Ms: 50, P99Ms: 99, MaxMs: 100}},
		{name: "microseconds to milliseconds, three decimals", log: txLog{LatenciesUs: []float64{1234, 5678}}, wantOK: true,
			want: Latency{Transactions: 2, MeanMs: 3.456, P50Ms: 1.234, P99Ms: 5.678, MaxMs: 5.678}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.log.summarize()
			if ok != tc.wantOK || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseSummary(t *testing.T) {
	report := `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
number of transactions actually processed: 394
number of failed transactions: 0 (0.000%)
latency average = 10.082 ms
initial connection time = 25.059 ms
tps = 198.364849 (without initial connection time)
`
	for _, tc := range []struct {
		name    string
		out     string
		want    summaryOutput
		wantErr bool
	}{
		{name: "pgbench 15", out: report, want: summaryOutput{TPS: 198.364849, Processed: 394, MeanLatencyMs: 10.082}},
		{name: "no tps line", out: "pgbench: error: connection refused\n", wantErr: true},
		{name: "the tps including connections is not taken", out: "tps = 5.0 (including connections establishing)\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSummary(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func f(v float64) *float64 { return &v }

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b float64
		want *float64
	}{
		{1, 2, f(0.5)}, {2, 3, f(0.667)}, {5, 0, nil}, {5, -1, nil}, {0, 4, f(0)},
	} {
		got := ratio(tc.a, tc.b)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("ratio(%g, %g) = %v, want %v", tc.a, tc.b, optional(got), optional(tc.want))
		}
	}
}

// run is a run with both figures.
func run(round, sync int, s side, tps, p99 float64) RunResult {
	return RunResult{Round: round, Synchronous: sync, Workload: workloadTPCB, System: s.system, Path: s.path, TPS: tps, Latency: Latency{Transactions: 10, P99Ms: p99}}
}

func TestCompareAndJudge(t *testing.T) {
	settings := PgbenchSettings{Rounds: 3, Workloads: []string{workloadTPCB}, Synchronous: []int{1}}
	for _, tc := range []struct {
		name                 string
		runs                 []RunResult
		wantTPS, wantP99     *float64
		wantTPSMet, wantP99M string
	}{
		{
			name: "median of the rounds' ratios meets both",
			runs: []RunResult{
				run(1, 1, oursDirect, 96, 10.4), run(1, 1, byHandPrimary, 100, 10),
				run(2, 1, oursDirect, 90, 12), run(2, 1, byHandPrimary, 100, 10),
				run(3, 1, oursDirect, 100, 10), run(3, 1, byHandPrimary, 100, 10),
			},
			wantTPS: f(0.96), wantP99: f(1.04), wantTPSMet: "yes", wantP99M: "yes",
		},
		{
			name: "slower in most rounds misses both",
			runs: []RunResult{
				run(1, 1, oursDirect, 90, 11), run(1, 1, byHandPrimary, 100, 10),
				run(2, 1, oursDirect, 94, 10.6), run(2, 1, byHandPrimary, 100, 10),
				run(3, 1, oursDirect, 101, 9), run(3, 1, byHandPrimary, 100, 10),
			},
			wantTPS: f(0.94), wantP99: f(1.06), wantTPSMet: "no", wantP99M: "no",
		},
		{
			name: "a failed run leaves it not judged",
			runs: []RunResult{
				run(1, 1, oursDirect, 100, 10), run(1, 1, byHandPrimary, 100, 10),
				{Round: 2, Synchronous: 1, Workload: workloadTPCB, System: systemOurs, Path: pathDirect, Error: "pgbench failed"}, run(2, 1, byHandPrimary, 100, 10),
				run(3, 1, oursDirect, 100, 10), run(3, 1, byHandPrimary, 100, 10),
			},
			wantTPSMet: "not judged (a round lacks a run's figure)", wantP99M: "not judged (a round lacks a run's figure)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &Results{Pgbench: settings, Runs: tc.runs}
			res.Comparisons = Compare(res.Runs, res.Pgbench)
			if len(res.Comparisons) != len(comparisons) {
				t.Fatalf("%d comparisons, want %d", len(res.Comparisons), len(comparisons))
			}
			direct := res.Comparisons[0]
			if direct.Subject != "ours direct" || direct.Reference != "by hand loopback" {
				t.Fatalf("first comparison is %s ÷ %s", direct.Subject, direct.Reference)
			}
			if optional(direct.MedianTPSRatio) != optional(tc.wantTPS) || optional(direct.MedianP99Ratio) != optional(tc.wantP99) {
				t.Fatalf("medians TPS %s, p99 %s; want %s, %s", optional(direct.MedianTPSRatio), optional(direct.MedianP99Ratio), optional(tc.wantTPS), optional(tc.wantP99))
			}
			checks := Checks(res)
			if len(checks) != 3 {
				t.Fatalf("%d checks, want TPS and p99 on the direct path and the Service path's figure", len(checks))
			}
			if checks[0].Met != tc.wantTPSMet || checks[1].Met != tc.wantP99M {
				t.Fatalf("met %q, %q; want %q, %q", checks[0].Met, checks[1].Met, tc.wantTPSMet, tc.wantP99M)
			}
			if !strings.HasPrefix(checks[2].Met, "n/a") {
				t.Fatalf("the Service path is judged: %q", checks[2].Met)
			}
		})
	}
}

func TestDiffSettings(t *testing.T) {
	ours := map[string]string{"wal_log_hints": "on", "port": "5432", "shared_buffers": "128MB", "wal_keep_size": "512MB", "only_ours": "x"}
	byHand := map[string]string{"wal_log_hints": "off", "port": "40001", "shared_buffers": "128MB", "wal_keep_size": "0", "only_hand": "y"}
	got := diffSettings(ours, byHand)
	want := SettingsDiff{
		Differ:    []SettingDiff{{"only_hand", "—", "y"}, {"only_ours", "x", "—"}, {"wal_keep_size", "512MB", "0"}, {"wal_log_hints", "on", "off"}},
		Placement: []SettingDiff{{"port", "5432", "40001"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// The report shows every ratio with its rounds, and every run.
func TestMarkdownShowsRatiosAndRuns(t *testing.T) {
	res := &Results{Pgbench: PgbenchSettings{Scale: 5, Clients: 4, Threads: 2, DurationSeconds: 20, Rounds: 1, Workloads: []string{workloadTPCB}, Synchronous: []int{1}},
		Runs:     []RunResult{run(1, 1, oursDirect, 96, 10.4), run(1, 1, oursService, 80, 13), run(1, 1, byHandPrimary, 100, 10)},
		Settings: SettingsDiff{Differ: []SettingDiff{{"wal_log_hints", "on", "off"}}}}
	res.Comparisons = Compare(res.Runs, res.Pgbench)
	res.Checks = Checks(res)
	md := Markdown(res)
	for _, want := range []string{
		"| tpcb-like | 1 | ours direct ÷ by hand loopback | 0.960 | 0.960 | 1.040 | 1.040 |",
		"| tpcb-like | 1 | ours service ÷ ours direct | 0.833 | 0.833 | 1.250 | 1.250 |",
		"| wal_log_hints | `on` | `off` |",
		"| 1 | 1 | tpcb-like | by hand | loopback | 100.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}
