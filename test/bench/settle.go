package main

import (
	"context"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

const (
	// settleEvery is the time between two scrapes while waiting for the
	// writes to stop, and settleLimit how long the wait goes on at most.
	settleEvery = 2 * time.Second
	settleLimit = 60 * time.Second
	// settleQuiet is how many scrapes in a row must see no new write.
	settleQuiet = 2
)

// settleResult says how a window that ends when the operator's writes stop
// ended.
type settleResult = benchkit.SettleResult

// settleWrites scrapes the API server's counters every interval until
// settleQuiet scrapes in a row see no new write to websites, deployments or
// services since the counts since, or until limit. It returns the last
// scrape and whether the writes had stopped; an error when a scrape fails
// or ctx ends.
func settleWrites(ctx context.Context, scrape func(context.Context) (benchkit.RequestCounts, error), since benchkit.RequestCounts, every, limit time.Duration) (benchkit.RequestCounts, settleResult, error) {
	return benchkit.SettleWrites(ctx, scrape, since, every, limit, settleQuiet, func(c benchkit.RequestCounts) float64 { return attribute(c).children() })
}

// unsettledMet withholds a "yes" when the window it judges ended before
// the writes stopped: the counts are a lower bound, and more writes may
// have followed. A "no" stands.
func unsettledMet(s *settleResult, met string) string {
	if s == nil || s.Settled || met != "yes" {
		return met
	}
	return "not judged (the writes had not stopped after " + s.Limit + ": the counts are a lower bound)"
}

// settleNote is what the report adds to a window that ended before the
// writes stopped.
func settleNote(s *settleResult) string {
	if s == nil || s.Settled {
		return ""
	}
	return ", unsettled: writes still coming"
}
