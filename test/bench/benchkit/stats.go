package benchkit

import (
	"slices"
)

// Percentile is the nearest-rank percentile of sorted values: the smallest
// value that at least p of them do not exceed. Of ten values, p99 is the
// largest.
func Percentile(sorted []float64, p float64) float64 {
	rank := int(p*float64(len(sorted))+0.999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return sorted[rank]
}

// Median is the median of values, the mean of the middle two for an even
// count, or nil when any value is missing: a round that failed or timed out
// makes no median.
func Median(values []*float64) *float64 {
	if len(values) == 0 {
		return nil
	}
	sorted := make([]float64, 0, len(values))
	for _, v := range values {
		if v == nil {
			return nil
		}
		sorted = append(sorted, *v)
	}
	slices.Sort(sorted)
	mid := len(sorted) / 2
	m := sorted[mid]
	if len(sorted)%2 == 0 {
		m = (sorted[mid-1] + sorted[mid]) / 2
	}
	m = Round3(m)
	return &m
}

// Distribution summarizes samples (seconds, or any other unit): their
// count, nearest-rank p50 and p99, and largest.
type Distribution struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

// Summarize is the Distribution of values, in any order; the zero
// Distribution when there are none.
func Summarize(values []float64) Distribution {
	if len(values) == 0 {
		return Distribution{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return Distribution{Samples: len(s), P50: Round3(Percentile(s, 0.50)), P99: Round3(Percentile(s, 0.99)), Max: Round3(s[len(s)-1])}
}
