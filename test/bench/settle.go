package main

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

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
type settleResult struct {
	// Settled is false when the writes were still coming when the wait
	// reached its limit: the window's counts are then a lower bound.
	Settled bool `json:"settled"`
	// Seconds is how long the wait took; Limit how long it could.
	Seconds float64 `json:"seconds"`
	Limit   string  `json:"limit"`
}

// settleWrites scrapes the API server's counters every interval until
// settleQuiet scrapes in a row see no new write to websites, deployments or
// services since the counts since, or until limit. It returns the last
// scrape and whether the writes had stopped; an error when a scrape fails
// or ctx ends.
func settleWrites(ctx context.Context, scrape func(context.Context) (benchkit.RequestCounts, error), since benchkit.RequestCounts, every, limit time.Duration) (benchkit.RequestCounts, settleResult, error) {
	start := time.Now()
	var last benchkit.RequestCounts
	lastTotal, quiet := -1.0, 0
	err := wait.PollUntilContextTimeout(ctx, every, limit, true, func(ctx context.Context) (bool, error) {
		now, err := scrape(ctx)
		if err != nil {
			return false, err
		}
		last = now
		total := attribute(now.WritesSince(since)).children()
		if total == lastTotal {
			quiet++
		} else {
			quiet = 0
		}
		lastTotal = total
		return quiet >= settleQuiet, nil
	})
	res := settleResult{Settled: err == nil, Seconds: benchkit.Round3(time.Since(start).Seconds()), Limit: limit.String()}
	switch {
	case err == nil:
		return last, res, nil
	case ctx.Err() != nil:
		return last, res, ctx.Err()
	case wait.Interrupted(err) && last != nil:
		// The limit: the writes go on, and the window ends anyway.
		return last, res, nil
	default:
		return last, res, err
	}
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
