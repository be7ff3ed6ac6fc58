package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/test/bench/benchkit"
)

// scrapes counts one more Deployment write at each scrape while writing,
// and none after.
type scrapes struct {
	calls, writing int
	err            error
}

func (s *scrapes) scrape(context.Context) (benchkit.RequestCounts, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.calls++
	return benchkit.RequestCounts{"POST apps/deployments": float64(min(s.calls, s.writing))}, nil
}

// A window that ends when the writes stop says when they did not: the
// wait's limit came first, and the counts are a lower bound.
func TestSettleRecordsWritesThatDidNotStop(t *testing.T) {
	for _, tc := range []struct {
		name        string
		scrapes     *scrapes
		wantSettled bool
		wantErr     string
	}{
		{"writes that stop", &scrapes{writing: 3}, true, ""},
		{"writes still coming at the limit", &scrapes{writing: 1 << 30}, false, ""},
		{"a scrape that fails", &scrapes{err: errors.New("scrape failed")}, false, "scrape failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			counts, res, err := settleWrites(context.Background(), tc.scrapes.scrape, benchkit.RequestCounts{}, time.Millisecond, time.Second)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Settled).To(Equal(tc.wantSettled))
			g.Expect(res.Limit).To(Equal("1s"))
			g.Expect(counts).To(HaveKey("POST apps/deployments"), "the last scrape")
		})
	}
}

// An unsettled window shows in the results: its "yes" verdicts are
// withheld, its "no" stand, and the report marks the window.
func TestUnsettledWindowsAreNotJudgedMetAndShown(t *testing.T) {
	g := NewWithT(t)
	unsettled := &settleResult{Settled: false, Seconds: 60, Limit: "1m0s"}
	withinBudget := costResult{PerWebsite: operatorWrites{Deployments: 1, Services: 1, WebsitesStatus: 2}, EventsPerWebsite: 1, ChildReads: map[string]float64{}, CreateWindowSeconds: 75, Settle: unsettled}
	ready := waitResult{Seconds: 0.3, Reached: 1, Target: 1}
	restart := restartResult{InitialPass: waitResult{Seconds: 2, Reached: 11, Target: 11}, NewWebsiteReady: ready, NewWebsiteOwn: operatorWrites{WebsitesStatus: 2}, WindowSeconds: 62, Settle: unsettled}
	overBudget := withinBudget
	overBudget.PerWebsite.WebsitesStatus = 3
	res := &results{Scenarios: []string{"cost", "restart"}, Runs: []*runResult{
		{N: 10, Cost: &withinBudget, Restart: &restart},
		{N: 20, Cost: &overBudget},
	}}
	res.Checks = computeChecks(res)
	var got []string
	for _, c := range res.Checks {
		got = append(got, fmt.Sprintf("%s N=%d: %s", c.Scenario, c.N, c.Met))
	}
	notJudged := "not judged (the writes had not stopped after 1m0s: the counts are a lower bound)"
	g.Expect(got).To(Equal([]string{
		"cost N=10: " + notJudged,    // writes per Website on create
		"restart N=10: " + notJudged, // 0 writes after a restart
		"restart N=10: " + notJudged, // the new Website's status writes
		"cost N=20: no",              // over the budget already
	}))
	md := markdown(res)
	g.Expect(md).To(ContainSubstring("| 75 s, unsettled: writes still coming |"), "the cost table's window")
	g.Expect(md).To(ContainSubstring("(62 s, unsettled: writes still coming)"), "the restart table's window")

	// Results from before the settle was recorded read as they did.
	withinBudget.Settle, overBudget.Settle, restart.Settle = nil, nil, nil
	res.Checks = computeChecks(res)
	g.Expect(res.Checks[0].Met).To(Equal("yes"))
	g.Expect(markdown(res)).NotTo(ContainSubstring("unsettled"))
}
