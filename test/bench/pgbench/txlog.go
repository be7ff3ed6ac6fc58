package pgbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// txLog is what pgbench's per-transaction logs (--log) of one run say:
// each line is "client_id transaction_no time script_no time_epoch
// time_us [schedule_lag] [retries]", where time is the transaction's
// latency in microseconds ("failed" or "skipped" when it has none) and
// time_us the microseconds part of its timestamp.
type txLog struct {
	// LatenciesUs are the latencies of the transactions that completed.
	LatenciesUs []float64
	// Failed and Skipped count the lines without a latency.
	Failed, Skipped int
}

// latencyField is the column of time, the latency: time_us (the sixth)
// is the timestamp's fraction, not a duration.
const latencyField = 2

// minTxLogFields are the fields every line has.
const minTxLogFields = 6

// parseTxLog reads one log file; name is for its errors.
func parseTxLog(r io.Reader, name string, into *txLog) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < minTxLogFields {
			return fmt.Errorf("%s:%d: %d fields, want at least %d: %q", name, line, len(fields), minTxLogFields, sc.Text())
		}
		switch v := fields[latencyField]; v {
		case "failed":
			into.Failed++
		case "skipped":
			into.Skipped++
		default:
			us, err := strconv.ParseFloat(v, 64)
			if err != nil || us < 0 {
				return fmt.Errorf("%s:%d: latency %q is not a number of microseconds", name, line, v)
			}
			into.LatenciesUs = append(into.LatenciesUs, us)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// readTxLogs reads every log file in dir, where one run wrote them (one
// per pgbench thread).
func readTxLogs(dir string) (txLog, error) {
	var all txLog
	files, err := filepath.Glob(filepath.Join(dir, logPrefix+".*"))
	if err != nil {
		return all, err
	}
	if len(files) == 0 {
		return all, fmt.Errorf("no transaction log %s.* in the run's folder", logPrefix)
	}
	for _, f := range files {
		if err := readTxLogFile(f, &all); err != nil {
			return all, err
		}
	}
	return all, nil
}

func readTxLogFile(path string, into *txLog) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return parseTxLog(f, filepath.Base(path), into)
}

// Latency summarizes the latencies of a run's transactions, in
// milliseconds.
type Latency struct {
	Transactions int     `json:"transactions"`
	MeanMs       float64 `json:"meanMs"`
	P50Ms        float64 `json:"p50Ms"`
	P99Ms        float64 `json:"p99Ms"`
	MaxMs        float64 `json:"maxMs"`
}

// summarize is the Latency of the log's completed transactions,
// nearest-rank percentiles; false when there are none.
func (l txLog) summarize() (Latency, bool) {
	if len(l.LatenciesUs) == 0 {
		return Latency{}, false
	}
	ms := make([]float64, len(l.LatenciesUs))
	sum := 0.0
	for i, us := range l.LatenciesUs {
		ms[i] = us / 1000
		sum += ms[i]
	}
	slices.Sort(ms)
	return Latency{
		Transactions: len(ms),
		MeanMs:       benchkit.Round3(sum / float64(len(ms))),
		P50Ms:        benchkit.Round3(benchkit.Percentile(ms, 0.50)),
		P99Ms:        benchkit.Round3(benchkit.Percentile(ms, 0.99)),
		MaxMs:        benchkit.Round3(ms[len(ms)-1]),
	}, true
}
