package benchkit

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// SettleResult says how a window that ends when the writes stop ended.
type SettleResult struct {
	// Settled is false when the writes were still coming when the wait
	// reached its limit: the window's counts are then a lower bound.
	Settled bool `json:"settled"`
	// Seconds is how long the wait took; Limit how long it could.
	Seconds float64 `json:"seconds"`
	Limit   string  `json:"limit"`
}

// SettleWrites scrapes the API server's counters every interval until
// quiet scrapes in a row see no change of total(writes since since), or
// until limit. It returns the last scrape and whether the writes had
// stopped; an error when a scrape fails or ctx ends.
func SettleWrites(ctx context.Context, scrape func(context.Context) (RequestCounts, error), since RequestCounts, every, limit time.Duration, quiet int, total func(RequestCounts) float64) (RequestCounts, SettleResult, error) {
	start := time.Now()
	var last RequestCounts
	lastTotal, still := -1.0, 0
	err := wait.PollUntilContextTimeout(ctx, every, limit, true, func(ctx context.Context) (bool, error) {
		now, err := scrape(ctx)
		if err != nil {
			return false, err
		}
		last = now
		t := total(now.WritesSince(since))
		if t == lastTotal {
			still++
		} else {
			still = 0
		}
		lastTotal = t
		return still >= quiet, nil
	})
	res := SettleResult{Settled: err == nil, Seconds: Round3(time.Since(start).Seconds()), Limit: limit.String()}
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
