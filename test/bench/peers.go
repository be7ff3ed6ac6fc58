package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// quotedKopf are figures of another operator (the tutorial's kopf
// operator) measured elsewhere, by the side-by-side harness, not by this
// program. A run reads them from a data file (-peers) into results.json,
// and the report shows what results.json holds: no figure of theirs is
// written in the code.
type quotedKopf struct {
	// Source says who measured them, how and when.
	Source string `json:"source"`
	// Exist, Avail and RSSMiB are keyed by N: the seconds until every
	// Deployment existed and was Available, and the peak RSS.
	Exist  map[string]float64 `json:"secondsUntilAllDeploymentsExisted"`
	Avail  map[string]float64 `json:"secondsUntilAllAvailable"`
	RSSMiB map[string]float64 `json:"peakRSSMiB"`
	// RSSAnyN is an RSS quoted without its N, as issue 6's results hold
	// it.
	RSSAnyN float64 `json:"rssMiB,omitempty"`
}

// peerRow is one N of the quoted figures; nil where none was quoted.
type peerRow struct {
	N                    int
	Exist, Avail, RSSMiB *float64
}

// rows are the quoted figures by N, in increasing N; keys that are not a
// number are left out.
func (q *quotedKopf) rows() []peerRow {
	if q == nil {
		return nil
	}
	byN := map[int]*peerRow{}
	for _, m := range []struct {
		figures map[string]float64
		into    func(*peerRow, *float64)
	}{
		{q.Exist, func(r *peerRow, v *float64) { r.Exist = v }},
		{q.Avail, func(r *peerRow, v *float64) { r.Avail = v }},
		{q.RSSMiB, func(r *peerRow, v *float64) { r.RSSMiB = v }},
	} {
		for key, v := range m.figures {
			n, err := strconv.Atoi(key)
			if err != nil {
				continue
			}
			if byN[n] == nil {
				byN[n] = &peerRow{N: n}
			}
			m.into(byN[n], &v)
		}
	}
	rows := make([]peerRow, 0, len(byN))
	for _, r := range byN {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b peerRow) int { return a.N - b.N })
	return rows
}

// loadPeers reads the quoted figures of a data file, which must name its
// source.
func loadPeers(path string) (*quotedKopf, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-peers: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	q := &quotedKopf{}
	if err := dec.Decode(q); err != nil {
		return nil, fmt.Errorf("-peers %s: %w", path, err)
	}
	if q.Source == "" {
		return nil, fmt.Errorf("-peers %s: no source: say who measured the figures, how and when", path)
	}
	if len(q.rows()) == 0 {
		return nil, fmt.Errorf("-peers %s: no figure by N", path)
	}
	return q, nil
}
