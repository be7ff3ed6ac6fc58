package pgbench

import (
	"fmt"
	"regexp"
	"strconv"
)

// tpsLine is pgbench's throughput over the run without the time its
// clients took to connect, which the Service's proxy would lengthen once
// per client and not per transaction.
var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9]+(?:\.[0-9]+)?) \(without initial connection time\)\s*$`)

// processedLine counts the transactions pgbench completed, a cross-check
// of the transaction logs.
var processedLine = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)

// latencyLine is pgbench's mean latency, a cross-check of the latency
// column this program reads in the transaction logs.
var latencyLine = regexp.MustCompile(`(?m)^latency average = ([0-9]+(?:\.[0-9]+)?) ms`)

// summaryOutput is what this program reads of pgbench's report on stdout.
type summaryOutput struct {
	TPS       float64
	Processed int
	// MeanLatencyMs is 0 when the report has none.
	MeanLatencyMs float64
}

// parseSummary reads pgbench's report: the throughput and the
// transactions processed.
func parseSummary(out string) (summaryOutput, error) {
	var s summaryOutput
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return s, fmt.Errorf("no line %q in pgbench's output", "tps = ... (without initial connection time)")
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return s, fmt.Errorf("tps %q: %w", m[1], err)
	}
	s.TPS = tps
	if m := processedLine.FindStringSubmatch(out); m != nil {
		s.Processed, _ = strconv.Atoi(m[1])
	}
	if m := latencyLine.FindStringSubmatch(out); m != nil {
		s.MeanLatencyMs, _ = strconv.ParseFloat(m[1], 64)
	}
	return s, nil
}
