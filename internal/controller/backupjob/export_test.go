package backupjob

import "k8s.io/utils/clock"

// AgePodListsBy makes r's shared pod lists age by clk: the reconciler tests
// move their fake clock between runs, as real time passes between real
// runs.
func AgePodListsBy(r *Reconciler, clk clock.PassiveClock) {
	r.namespacePods.clock = clk
}
