package main

import (
	"slices"
	"sort"

	"example.com/platform-operator/test/bench/benchkit"
)

// controlPlane are the processes of the local cluster in the CPU tables.
var controlPlane = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// cpuWorkRatio is the CPU-seconds of the control plane and the operator
// during the operator's burst over those of the control plane during the
// ceiling: how much more work the operator's way costs, whatever else ran
// on the machine. 0 when either is missing.
func cpuWorkRatio(burst, ceiling map[string]float64) float64 {
	return cpuRatio(burst, ceiling, append(slices.Clone(controlPlane), operatorName))
}

// controlPlaneRatio is cpuWorkRatio without the operator's own CPU: the
// extra work its requests and watches cause in the control plane. On a
// machine that the control plane keeps busy, the wall-clock ratios cannot
// go much below it however little CPU the operator itself uses.
func controlPlaneRatio(burst, ceiling map[string]float64) float64 {
	return cpuRatio(burst, ceiling, controlPlane)
}

// cpuRatio is the CPU-seconds of the processes named in the burst over
// those of the control plane in the ceiling; 0 when either is missing.
func cpuRatio(burst, ceiling map[string]float64, inBurst []string) float64 {
	sum := func(m map[string]float64, names []string) float64 {
		total := 0.0
		for _, n := range names {
			total += m[n]
		}
		return total
	}
	c := sum(ceiling, controlPlane)
	if c == 0 || len(burst) == 0 {
		return 0
	}
	return benchkit.Round3(sum(burst, inBurst) / c)
}

// cpuPhases are the phases of the CPU tables, in the order they run.
var cpuPhases = []string{"ceiling (Deployments alone)", "ceiling (Deployments and Services)", scriptedName, kopfPhase, "operator burst", "idle", "restart", "drift"}

// cpuTable is the CPU seconds of each process, one row per N and phase.
type cpuTable struct {
	// Procs are the columns: the operator, the control plane in a fixed
	// order, this program, then any other process by name.
	Procs []string
	// NProc is the machine's CPUs, for the machine's capacity.
	NProc int
	Rows  []cpuRow
	// Measured is false when no phase of the table has CPU figures.
	Measured bool
}

type cpuRow struct {
	N     int
	Phase string
	// Wall is the phase's wall-clock seconds.
	Wall float64
	// Seconds are the CPU seconds of each of the table's Procs; nil where
	// the process was not measured.
	Seconds []*float64
	// ControlPlane is the CPU seconds of every process but the operator
	// and this program.
	ControlPlane float64
	// Others are the CPU seconds of the machine's other processes, and
	// MachineBusy those of all of them; nil when the machine was not
	// measured.
	Others, MachineBusy *float64
	// Capacity is the machine's CPU seconds in the phase: Wall × NProc.
	Capacity float64
}

// buildCPUTable computes the CPU table of the given phases (every phase
// when phases is nil).
func buildCPUTable(res *results, phases []string) cpuTable {
	t := cpuTable{NProc: res.Machine.NProc}
	chosen := func(ph string) bool { return phases == nil || slices.Contains(phases, ph) }
	procSet := map[string]bool{}
	for _, r := range res.Runs {
		for ph, procs := range r.Footprint.CPUSeconds {
			if !chosen(ph) {
				continue
			}
			for p := range procs {
				procSet[p] = true
			}
		}
	}
	t.Measured = len(procSet) > 0
	delete(procSet, machineName)
	delete(procSet, wallName)
	order := []string{operatorName, kopfScenario, "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", benchName}
	for _, p := range order {
		if procSet[p] {
			t.Procs = append(t.Procs, p)
			delete(procSet, p)
		}
	}
	var rest []string
	for p := range procSet {
		rest = append(rest, p)
	}
	sort.Strings(rest)
	t.Procs = append(t.Procs, rest...)
	for _, r := range res.Runs {
		for _, ph := range cpuPhases {
			cpu, ok := r.Footprint.CPUSeconds[ph]
			if !ok || !chosen(ph) {
				continue
			}
			row := cpuRow{N: r.N, Phase: ph, Wall: cpu[wallName], Seconds: make([]*float64, len(t.Procs))}
			ours := 0.0
			for i, p := range t.Procs {
				v, ok := cpu[p]
				if !ok {
					continue
				}
				row.Seconds[i] = &v
				ours += v
				if p != operatorName && p != kopfScenario && p != benchName {
					row.ControlPlane += v
				}
			}
			if m, ok := cpu[machineName]; ok {
				others := max(0, m-ours)
				row.Others, row.MachineBusy = &others, &m
			}
			row.Capacity = row.Wall * float64(t.NProc)
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}
