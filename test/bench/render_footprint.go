package main

import (
	"fmt"
	"strings"
)

// writeFootprint renders the operator's memory, the CPU of every phase and
// process, and the heap profiles.
func writeFootprint(w *mdWriter, res *results, rep *report) {
	w.P("## Footprint\n\n| N | operator peak RSS (200 ms samples) | of which anonymous / file-backed | peak anonymous RSS | VmHWM per process | operator CPU, whole run | heap in use after burst | goroutines after burst |\n|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, r := range res.Runs {
		f := r.Footprint
		heap, gor := "—", "—"
		if r.Burst != nil && r.Burst.Operator.HeapInuseMiB > 0 {
			heap = fmt.Sprintf("%.1f MiB", r.Burst.Operator.HeapInuseMiB)
			gor = fmt.Sprintf("%.0f", r.Burst.Operator.Goroutines)
		}
		hwm := make([]string, len(f.HWMMiB))
		for i, h := range f.HWMMiB {
			hwm[i] = fmt.Sprintf("%.1f MiB", h)
		}
		w.P("| %d | %.1f MiB (%d samples) | %.1f / %.1f MiB | %.1f MiB | %s | %.2f s | %s | %s |\n", r.N, f.PeakRSSMiB, f.RSSSamples, f.AnonAtPeakMiB, f.FileAtPeakMiB, f.PeakAnonMiB, strings.Join(hwm, ", "), f.OperatorCPUSeconds, heap, gor)
	}
	w.P("\nCPU seconds per phase and process (the control plane next to the operator):\n\n")
	writeCPUTable(w, rep.AllCPU)
	w.P("Heap profile: %s.\n\n", res.HeapProfile)
	for _, r := range res.Runs {
		if len(r.Footprint.HeapTop) == 0 {
			continue
		}
		w.P("N=%d, heap in use after the burst (`%s`, `go tool pprof -top -sample_index=inuse_space`):\n\n```\n%s\n```\n\n", r.N, r.Footprint.HeapProfile, strings.Join(r.Footprint.HeapTop, "\n"))
	}
}

// writeCPUTable renders a table of CPU seconds, one row per N and phase,
// one column per process.
func writeCPUTable(w *mdWriter, t cpuTable) {
	if !t.Measured {
		w.P("(none measured)\n\n")
		return
	}
	w.P("| N | phase | seconds | %s | control plane total | other processes on the machine | machine busy (of %d CPUs × seconds) |\n|---:|---|---:|%s---:|---:|---:|\n", strings.Join(t.Procs, " | "), t.NProc, strings.Repeat("---:|", len(t.Procs)))
	for _, row := range t.Rows {
		cells := make([]string, len(row.Seconds))
		for i, v := range row.Seconds {
			cells[i] = "—"
			if v != nil {
				cells[i] = fmt.Sprintf("%.1f", *v)
			}
		}
		others, busy := "—", "—"
		if row.MachineBusy != nil {
			others = fmt.Sprintf("%.1f", *row.Others)
			busy = fmt.Sprintf("%.1f of %.0f", *row.MachineBusy, row.Capacity)
		}
		w.P("| %d | %s | %.0f | %s | %.1f | %s | %s |\n", row.N, row.Phase, row.Wall, strings.Join(cells, " | "), row.ControlPlane, others, busy)
	}
	w.P("\n")
}
