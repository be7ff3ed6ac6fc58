package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// The report quotes the other operator's figures that results.json holds,
// whatever they are, and nothing when it holds none.
func TestPeerFiguresAreRenderedFromTheResults(t *testing.T) {
	g := NewWithT(t)
	res := &results{Quoted: &quotedKopf{
		Source: "a peer measured elsewhere",
		Exist:  map[string]float64{"70": 15, "7": 1.5},
		Avail:  map[string]float64{"7": 2.5},
		RSSMiB: map[string]float64{"7": 42},
	}}
	md := markdown(res)
	g.Expect(md).To(ContainSubstring("For comparison, figures that this program **did not measure** (a peer measured elsewhere): " +
		"all Deployments existed / were Available after 1.5 s / 2.5 s at N=7, 15 s / — at N=70; peak RSS 42 MiB at N=7.\n"))
	g.Expect(md).NotTo(ContainSubstring("161.3"), "no figure from anywhere but the results")

	res.Quoted = nil
	g.Expect(markdown(res)).NotTo(ContainSubstring("For comparison, figures"))
}

// Issue 6's results quote other figures than issue 11's, in an older shape:
// they render as they are.
func TestOlderResultsRenderTheirOwnPeerFigures(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("results", "history", "2026-11-30-issue-6", "results.json"))
	g.Expect(err).NotTo(HaveOccurred())
	res := &results{}
	g.Expect(json.Unmarshal(data, res)).To(Succeed())
	md := markdown(res)
	g.Expect(md).To(ContainSubstring("(quoted from issue 6, not measured here: the tutorial's kopf operator): " +
		"all Deployments existed / were Available after 6 s / 23.7 s at N=100, 62.7 s / 240 s at N=1000; RSS 115 MiB (no N given).\n"))
	g.Expect(md).NotTo(ContainSubstring("161.3"), "issue 11's figures are not in this file")
}

func TestPeerFiguresFile(t *testing.T) {
	g := NewWithT(t)
	q, err := loadPeers("peers.json")
	g.Expect(err).NotTo(HaveOccurred(), "the figures a run quotes by default")
	g.Expect(q.Source).NotTo(BeEmpty())
	var ns []int
	for _, r := range q.rows() {
		g.Expect(r.Exist).NotTo(BeNil(), "N=%d", r.N)
		g.Expect(r.Avail).NotTo(BeNil(), "N=%d", r.N)
		ns = append(ns, r.N)
	}
	g.Expect(ns).To(Equal([]int{100, 1000, 5000}))

	dir := t.TempDir()
	for name, text := range map[string]string{
		"no source":      `{"secondsUntilAllDeploymentsExisted": {"100": 1}}`,
		"no figure by N": `{"source": "somewhere", "secondsUntilAllAvailable": {"many": 1}}`,
		"unknown field":  `{"source": "somewhere", "secondsUntilAllAvailable": {"100": 1}, "cpu": 3}`,
	} {
		path := filepath.Join(dir, "peers.json")
		g.Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
		_, err := loadPeers(path)
		g.Expect(err).To(HaveOccurred(), name)
	}
}
