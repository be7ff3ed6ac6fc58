package main

import "testing"

// The memory targets are judged on VmHWM, the kernel's exact peak, not on
// the samples, which can miss a peak between two of them.
func TestPeakRSSIsJudgedOnVmHWM(t *testing.T) {
	sampled := footprintResult{PeakRSSMiB: 63, AnonAtPeakMiB: 35, FileAtPeakMiB: 28, RSSSamples: 700, SampleEvery: "200ms"}
	with := func(f footprintResult, hwm ...float64) footprintResult { f.HWMMiB = hwm; return f }
	for _, tc := range []struct {
		name       string
		n          int
		footprint  footprintResult
		wantTarget string
		wantMet    string
		wantFigure string
	}{
		{"a peak the samples missed: over the target", 1000, with(sampled, 63.5, 64.8), "peak RSS (VmHWM) ≤ 64 MiB", "no",
			"VmHWM 64.8 MiB (the highest of the operator processes' 63.5, 64.8 MiB); sampled every 200ms: 63.0 MiB (35.0 anonymous + 28.0 file-backed)"},
		{"within the target", 1000, with(sampled, 63.1, 62.9), "peak RSS (VmHWM) ≤ 64 MiB", "yes",
			"VmHWM 63.1 MiB (the highest of the operator processes' 63.1, 62.9 MiB); sampled every 200ms: 63.0 MiB (35.0 anonymous + 28.0 file-backed)"},
		{"one process", 5000, with(sampled, 151), "peak RSS (VmHWM) ≤ 150 MiB", "no",
			"VmHWM 151.0 MiB; sampled every 200ms: 63.0 MiB (35.0 anonymous + 28.0 file-backed)"},
		{"no VmHWM: not judged on the samples", 1000, sampled, "peak RSS (VmHWM) ≤ 64 MiB", "not judged (no VmHWM recorded)",
			"no VmHWM recorded; sampled every 200ms: 63.0 MiB (35.0 anonymous + 28.0 file-backed)"},
		{"no target at this N", 100, with(sampled, 63.5), "peak RSS (targets at N=1000 and 5000 only)", "n/a (no target at this N)",
			"VmHWM 63.5 MiB; sampled every 200ms: 63.0 MiB (35.0 anonymous + 28.0 file-backed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := computeChecks(&results{Runs: []*runResult{{N: tc.n, Footprint: tc.footprint}}})
			if len(checks) != 1 {
				t.Fatalf("checks %+v, want the footprint's", checks)
			}
			c := checks[0]
			if c.Target != tc.wantTarget || c.Met != tc.wantMet || c.Figure != tc.wantFigure {
				t.Errorf("got %q, met %q, figure %q\nwant %q, met %q, figure %q", c.Target, c.Met, c.Figure, tc.wantTarget, tc.wantMet, tc.wantFigure)
			}
		})
	}
}
