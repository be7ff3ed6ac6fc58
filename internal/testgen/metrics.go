package testgen

import (
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter is the value of the counter name whose labels include labels, in
// the registry the operator's metrics are served from; 0 when it has not
// been counted yet (a counter appears with its first increment).
func Counter(name string, labels map[string]string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if matches(have, labels) {
				return m.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, nil
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
