package operator

import (
	"testing"

	"example.com/platform-operator/internal/operator/domainmetrics"
)

// A kind added to the registry gets its domain metrics too (see
// internal/operator/domainmetrics), or the alerts' authors would look for
// them in vain.
func TestEveryKindHasDomainMetrics(t *testing.T) {
	for _, d := range Controllers() {
		if !domainmetrics.Exports(d.Name) {
			t.Errorf("controller %s has no domain metrics in internal/operator/domainmetrics", d.Name)
		}
	}
}
