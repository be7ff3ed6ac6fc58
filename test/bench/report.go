package main

import (
	"fmt"
	"strings"
)

// report is what results.md shows that is computed from the results rather
// than read from them as they are. The verdicts are not here: they are
// computed into results.Checks (computeChecks), since results.json holds
// them too. buildReport computes it; the render functions format it.
type report struct {
	// Runs are the figures of each run, in the order of results.Runs.
	Runs []runFigures
	// BurstCPU is the CPU table of the phases that the burst is compared
	// with; AllCPU that of every phase.
	BurstCPU, AllCPU cpuTable
	// Problems are the runs' errors and cluster health reports.
	Problems []string
	// Peers are the other operator's figures that the results quote, by N.
	Peers []peerRow
}

// runFigures are the figures computed for one run.
type runFigures struct {
	N int
	// CPUWork and ControlPlaneWork are the burst's CPU-seconds over the
	// ceiling's, with and without the operator's own (cpuWorkRatio,
	// controlPlaneRatio); 0 unless both ran.
	CPUWork, ControlPlaneWork float64
	// ScriptedControlPlane is the scripted client's control plane
	// CPU-seconds over the ceiling's; 0 unless both ran.
	ScriptedControlPlane float64
}

// burstComparedPhases are the phases of the CPU table next to the burst.
var burstComparedPhases = []string{"ceiling (Deployments alone)", "ceiling (Deployments and Services)", scriptedName, "operator burst"}

func buildReport(res *results) *report {
	rep := &report{
		BurstCPU: buildCPUTable(res, burstComparedPhases),
		AllCPU:   buildCPUTable(res, nil),
		Peers:    res.Quoted.rows(),
	}
	for _, r := range res.Runs {
		f := runFigures{N: r.N}
		if c := r.Ceiling; c != nil {
			if b := r.Burst; b != nil {
				f.CPUWork = cpuWorkRatio(b.CPUSeconds, c.CPUSeconds)
				f.ControlPlaneWork = controlPlaneRatio(b.CPUSeconds, c.CPUSeconds)
			}
			if sc := r.Scripted; sc != nil {
				f.ScriptedControlPlane = controlPlaneRatio(sc.CPUSeconds, c.CPUSeconds)
			}
		}
		rep.Runs = append(rep.Runs, f)
	}
	for _, r := range res.Runs {
		for _, h := range r.ClusterHealth {
			rep.Problems = append(rep.Problems, fmt.Sprintf("N=%d: cluster health: %s", r.N, h))
		}
		for _, e := range r.Errors {
			rep.Problems = append(rep.Problems, fmt.Sprintf("N=%d: %s", r.N, firstLine(e)))
		}
	}
	return rep
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (res *results) anyRun(f func(*runResult) bool) bool {
	for _, r := range res.Runs {
		if f(r) {
			return true
		}
	}
	return false
}
