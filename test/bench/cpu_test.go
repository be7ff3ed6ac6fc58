package main

import (
	"testing"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/test/bench/benchkit"
)

func TestCPUTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	res := &results{Machine: benchkit.Machine{NProc: 2}, Runs: []*runResult{{N: 10, Footprint: footprintResult{CPUSeconds: map[string]map[string]float64{
		"operator burst": {operatorName: 2, "kube-apiserver": 5, "etcd": 1, benchName: 1, "other-tool": 0.5, machineName: 12, wallName: 10},
		"idle":           {"kube-apiserver": 1, wallName: 60},
	}}}}}
	for _, tc := range []struct {
		name   string
		phases []string
		want   cpuTable
	}{
		{"every phase, in the order they run; processes in a fixed order, then by name", nil, cpuTable{
			Procs: []string{operatorName, "kube-apiserver", "etcd", benchName, "other-tool"}, NProc: 2, Measured: true,
			Rows: []cpuRow{
				{N: 10, Phase: "operator burst", Wall: 10, Seconds: []*float64{f(2), f(5), f(1), f(1), f(0.5)}, ControlPlane: 6.5, Others: f(2.5), MachineBusy: f(12), Capacity: 20},
				{N: 10, Phase: "idle", Wall: 60, Seconds: []*float64{nil, f(1), nil, nil, nil}, ControlPlane: 1, Capacity: 120},
			},
		}},
		{"the phases asked for only", []string{"idle"}, cpuTable{
			Procs: []string{"kube-apiserver"}, NProc: 2, Measured: true,
			Rows: []cpuRow{{N: 10, Phase: "idle", Wall: 60, Seconds: []*float64{f(1)}, ControlPlane: 1, Capacity: 120}},
		}},
		{"nothing measured", []string{"drift"}, cpuTable{NProc: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(buildCPUTable(res, tc.phases)).To(Equal(tc.want))
		})
	}
}
