package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

// idle is the cost scenario: the writes of the burst, per Website, from its
// first create until the writes stopped, then of a window (60 s by default)
// with N Websites and nothing to do.
func (e *env) idle(ctx context.Context) error {
	if e.burstStart == nil {
		return errors.New("the cost scenario needs the burst's figures")
	}
	if err := e.createCost(ctx); err != nil {
		return err
	}
	defer e.phase("cost: idle")()
	res := &idleResult{}
	e.res.Cost.Idle = res
	events0, _, err := e.countOperatorEvents(ctx)
	if err != nil {
		return err
	}
	op0, _ := e.endpoint.WaitScrape(ctx, 10*time.Second)
	cpu0 := e.snapshotCPU()
	before, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	start := time.Now()
	e.logf("idle: watching writes for %s", e.cfg.idle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(e.cfg.idle):
	}
	after, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return err
	}
	res.Seconds = benchkit.Round3(time.Since(start).Seconds())
	e.recordCPU("idle", cpu0)
	res.Raw = after.WritesSince(before)
	res.Writes = attribute(res.Raw)
	res.Total = res.Writes.children()
	events1, _, err := e.countOperatorEvents(ctx)
	if err != nil {
		return err
	}
	res.OperatorEvents = events1.writes() - events0.writes()
	if op1, err := e.endpoint.WaitScrape(ctx, 10*time.Second); err == nil && op0 != nil {
		res.OperatorClientRequests = diffMap(summarizeOperator(op1).Requests, summarizeOperator(op0).Requests)
	}
	e.logf("idle: %g writes to websites, websites/status, deployments and services in %.0f s; operator events %d; all writes: %s",
		res.Total, res.Seconds, res.OperatorEvents, strings.Join(res.Raw.Sorted(), " "))
	return nil
}

// createCost counts the API server's writes from the burst's first create
// until the writes stopped, and attributes them.
func (e *env) createCost(ctx context.Context) error {
	defer e.phase("cost: create")()
	b := e.burstStart
	after, settled, err := e.settle(ctx, b.apiStart)
	if err != nil {
		return err
	}
	cost := &costResult{CreateWindowSeconds: benchkit.Round3(time.Since(b.at).Seconds()), Settle: settled}
	cost.CreateRaw = after.WritesSince(b.apiStart)
	cost.Create = attribute(cost.CreateRaw)
	n := float64(e.n)
	cost.PerWebsite = operatorWrites{
		Websites:       benchkit.Round3(cost.Create.Websites / n),
		WebsitesStatus: benchkit.Round3(cost.Create.WebsitesStatus / n),
		Deployments:    benchkit.Round3(cost.Create.Deployments / n),
		Services:       benchkit.Round3(cost.Create.Services / n),
		EventsAll:      benchkit.Round3(cost.Create.EventsAll / n),
	}
	cost.ChildrenPerWebsite = benchkit.Round3(cost.Create.children() / n)
	if cost.OperatorEvents, cost.EventsByController, err = e.countOperatorEvents(ctx); err != nil {
		return err
	}
	cost.EventsPerWebsite = benchkit.Round3(float64(cost.OperatorEvents.writes()) / n)
	cost.TotalPerWebsite = benchkit.Round3(cost.ChildrenPerWebsite + cost.EventsPerWebsite)
	opStart := summarizeOperator(b.opStart)
	opAfter := opStart
	if samples, err := e.endpoint.WaitScrape(ctx, 10*time.Second); err == nil {
		opAfter = summarizeOperator(samples)
	}
	cost.OperatorClientRequests = diffMap(opAfter.Requests, opStart.Requests)
	cost.ChildReads = diffMap(opAfter.ChildReads, opStart.ChildReads)
	cost.ReconcilesPerWebsite = benchkit.Round3((opAfter.Reconciles - opStart.Reconciles) / n)
	cost.OperatorRequestsPerWebsite = map[string]float64{}
	for method, v := range cost.OperatorClientRequests {
		cost.OperatorRequestsPerWebsite[method] = benchkit.Round3(v / n)
	}
	e.res.Cost = cost
	e.logf("cost: writes per Website on create: websites %.2f, websites/status %.2f, deployments %.2f, services %.2f, operator events %.2f (all writers' events %.2f); %.2f reconciles per Website",
		cost.PerWebsite.Websites, cost.PerWebsite.WebsitesStatus, cost.PerWebsite.Deployments, cost.PerWebsite.Services, cost.EventsPerWebsite, cost.PerWebsite.EventsAll, cost.ReconcilesPerWebsite)
	e.logf("cost: write requests by verb and resource: %s", strings.Join(cost.CreateRaw.Sorted(), " "))
	return nil
}

func diffMap(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// sumValues adds up a map's values; a counter the operator has not yet
// incremented is absent from its metrics, and counts as 0.
func sumValues(m map[string]float64) float64 {
	total := 0.0
	for _, v := range m {
		total += v
	}
	return total
}

// withinBudget reports whether the burst kept to issue 11's budget per
// Website: one write per child, at most two status writes and one event,
// no write to the Websites themselves, and no child read past the cache
// (nil: the run did not count them).
func (c *costResult) withinBudget() bool {
	w := c.PerWebsite
	return w.Deployments <= 1 && w.Services <= 1 && w.WebsitesStatus <= 2 && c.EventsPerWebsite <= 1 && w.Websites == 0 &&
		c.ChildReads != nil && sumValues(c.ChildReads) == 0
}
