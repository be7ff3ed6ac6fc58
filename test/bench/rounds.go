package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// roundResult is one round of the burst's comparison: the ceiling creating
// Deployments and Services, the scripted client (when chosen) and the
// operator's burst, each on a fresh cluster of its own, one after the
// other.
type roundResult struct {
	Ceiling          waitResult `json:"ceilingExist"`
	CeilingAvailable waitResult `json:"ceilingAvailable"`
	OperatorExist    waitResult `json:"operatorExist"`
	OperatorReady    waitResult `json:"operatorReady"`
	ExistRatio       *float64   `json:"existRatio,omitempty"`
	ReadyRatio       *float64   `json:"readyVsAvailableRatio,omitempty"`
	// ScriptedReady is the scripted client's Ready; ScriptedReadyRatio
	// it ÷ the ceiling's Available; OperatorScriptedRatio the operator's
	// Ready ÷ the scripted client's.
	// KopfAvailable is the kopf peer's every Deployment Available;
	// KopfReadyRatio the operator's Ready ÷ it, KopfCPURatio and
	// KopfRSSRatio the operator's CPU during the burst and peak RSS ÷ the
	// kopf process's.
	KopfAvailable         *waitResult `json:"kopfAvailable,omitempty"`
	KopfReadyRatio        *float64    `json:"operatorReadyVsKopfAvailableRatio,omitempty"`
	KopfCPURatio          *float64    `json:"operatorVsKopfCPURatio,omitempty"`
	KopfRSSRatio          *float64    `json:"operatorVsKopfRSSRatio,omitempty"`
	ScriptedReady         waitResult  `json:"scriptedReady"`
	ScriptedReadyRatio    *float64    `json:"scriptedReadyVsAvailableRatio,omitempty"`
	OperatorScriptedRatio *float64    `json:"operatorVsScriptedReadyRatio,omitempty"`
	Errors                []string    `json:"errors,omitempty"`
	ClusterHealth         []string    `json:"clusterHealth,omitempty"`
}

// roundsResult holds every round of one N, the measuring run's own last,
// and the medians of their ratios, on which the ratio targets are judged:
// on this shared machine one round's ratio moves by more than the margin
// of the target.
type roundsResult struct {
	Rounds []roundResult `json:"rounds"`
	// ExistRatio and ReadyRatio are the medians of the rounds' ratios; nil
	// unless every round has one.
	ExistRatio *float64 `json:"medianExistRatio,omitempty"`
	ReadyRatio *float64 `json:"medianReadyVsAvailableRatio,omitempty"`
	// ScriptedReadyRatio and OperatorScriptedRatio are the medians of the
	// rounds' comparisons with the scripted client, when it ran.
	ScriptedReadyRatio    *float64 `json:"medianScriptedReadyVsAvailableRatio,omitempty"`
	OperatorScriptedRatio *float64 `json:"medianOperatorVsScriptedReadyRatio,omitempty"`
	// KopfReadyRatio, KopfCPURatio and KopfRSSRatio are the medians of the
	// rounds' comparisons with the kopf peer, when it ran.
	KopfReadyRatio *float64 `json:"medianOperatorReadyVsKopfAvailableRatio,omitempty"`
	KopfCPURatio   *float64 `json:"medianOperatorVsKopfCPURatio,omitempty"`
	KopfRSSRatio   *float64 `json:"medianOperatorVsKopfRSSRatio,omitempty"`
}

// plainRatio is a ÷ b, rounded; nil unless both are positive.
func plainRatio(a, b float64) *float64 {
	if a <= 0 || b <= 0 {
		return nil
	}
	r := benchkit.Round3(a / b)
	return &r
}

// extraRounds runs rounds-1 rounds of the ceiling, the scripted client
// (when chosen) and the operator's burst alone, before the measuring run of
// n: their times only, while the footprint, the costs, the restart and the
// drift come from the measuring run. Each round has its own clusters and
// operator process, and its logs in a folder of its own.
func extraRounds(ctx context.Context, cfg *config, n int) []roundResult {
	var rounds []roundResult
	for k := 1; k < cfg.rounds && ctx.Err() == nil; k++ {
		r := runN(ctx, roundConfig(cfg, k), n)
		rounds = append(rounds, roundOf(r))
	}
	return rounds
}

// addRoundErrors makes the extra rounds' errors the measuring run's.
func addRoundErrors(res *runResult, extra []roundResult) {
	for k, r := range extra {
		for _, e := range r.Errors {
			res.Errors = append(res.Errors, fmt.Sprintf("round %d: %s", k+1, e))
		}
	}
}

// podsMarkedNotReady names the rounds in which the node lifecycle
// controller marked pods not ready, which invalidates their Ready times.
func (r *roundsResult) podsMarkedNotReady() string {
	if r == nil {
		return ""
	}
	var rounds []string
	for k, round := range r.Rounds {
		if len(round.ClusterHealth) > 0 {
			rounds = append(rounds, fmt.Sprint(k+1))
		}
	}
	return strings.Join(rounds, ", ")
}

// roundConfig is cfg for extra round k: the ceiling, the scripted client
// and the kopf peer when chosen, and the burst, without profiles.
func roundConfig(cfg *config, k int) *config {
	c := *cfg
	c.rounds = 1
	c.round = fmt.Sprintf("round %d/%d", k, cfg.rounds)
	c.roundNumber = k
	c.scenarios = map[string]bool{"ceiling": cfg.scenarios["ceiling"], "burst": true, "scripted": cfg.scenarios["scripted"], kopfScenario: cfg.scenarios[kopfScenario]}
	maps.DeleteFunc(c.scenarios, func(_ string, chosen bool) bool { return !chosen })
	c.scenarioList = slices.Sorted(maps.Keys(c.scenarios))
	c.heapProfile, c.cpuProfile = false, 0
	c.logDir = filepath.Join(cfg.logDir, fmt.Sprintf("round-%d", k))
	return &c
}

// roundOf is the round that run r measured.
func roundOf(r *runResult) roundResult {
	round := roundResult{Errors: r.Errors, ClusterHealth: r.ClusterHealth}
	if c := r.Ceiling; c != nil {
		round.Ceiling, round.CeilingAvailable = c.Exist, c.Available
	}
	if b := r.Burst; b != nil {
		round.OperatorExist, round.OperatorReady = b.Exist, b.Ready
		round.ExistRatio, round.ReadyRatio = b.ExistRatio, b.ReadyRatio
		round.OperatorScriptedRatio = b.ScriptedReadyRatio
	}
	if sc := r.Scripted; sc != nil {
		round.ScriptedReady, round.ScriptedReadyRatio = sc.Ready, sc.ReadyRatio
	}
	if k := r.Kopf; k != nil {
		round.KopfAvailable = &k.Available
		if b := r.Burst; b != nil {
			round.KopfReadyRatio = ratio(b.Ready, k.Available)
			round.KopfCPURatio = plainRatio(b.CPUSeconds[operatorName], k.CPUSeconds)
		}
		if len(r.Footprint.HWMMiB) > 0 {
			round.KopfRSSRatio = plainRatio(r.Footprint.HWMMiB[0], k.HWMMiB)
		}
	}
	return round
}

// summarizeRounds adds the measuring run's own round to the extra ones and
// takes the medians.
func summarizeRounds(extra []roundResult, measuring *runResult) *roundsResult {
	res := &roundsResult{Rounds: append(slices.Clone(extra), roundOf(measuring))}
	res.ExistRatio = res.medianOf(func(r roundResult) *float64 { return r.ExistRatio })
	res.ReadyRatio = res.medianOf(func(r roundResult) *float64 { return r.ReadyRatio })
	if measuring.Kopf != nil {
		res.KopfReadyRatio = res.medianOf(func(r roundResult) *float64 { return r.KopfReadyRatio })
		res.KopfCPURatio = res.medianOf(func(r roundResult) *float64 { return r.KopfCPURatio })
		res.KopfRSSRatio = res.medianOf(func(r roundResult) *float64 { return r.KopfRSSRatio })
	}
	if measuring.Scripted != nil {
		res.ScriptedReadyRatio = res.medianOf(func(r roundResult) *float64 { return r.ScriptedReadyRatio })
		res.OperatorScriptedRatio = res.medianOf(func(r roundResult) *float64 { return r.OperatorScriptedRatio })
	}
	return res
}

// medianOf is the median of the ratio that pick reads from each round.
func (r *roundsResult) medianOf(pick func(roundResult) *float64) *float64 {
	values := make([]*float64, len(r.Rounds))
	for i, round := range r.Rounds {
		values[i] = pick(round)
	}
	return benchkit.Median(values)
}
