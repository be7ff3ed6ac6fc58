package main

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

// nSeries is one line of the chart against N: a time for each N.
type nSeries struct {
	name, color string
	dashed      bool
	points      [][2]float64
}

// timeToReadySeries are the times until every Website was Ready and every
// ceiling Deployment Available, and until their children existed, for each
// N that completed them.
func timeToReadySeries(res *results) []*nSeries {
	ss := []*nSeries{
		{name: "operator: all Websites Ready", color: "#1f77b4"},
		{name: "ceiling: all Deployments Available", color: "#ff7f0e"},
		{name: "operator: all children exist", color: "#1f77b4", dashed: true},
		{name: "ceiling: all children exist", color: "#ff7f0e", dashed: true},
	}
	for _, r := range res.Runs {
		n := float64(r.N)
		if b := r.Burst; b != nil {
			if b.Ready.ok() {
				ss[0].points = append(ss[0].points, [2]float64{n, b.Ready.Seconds})
			}
			if b.Exist.ok() {
				ss[2].points = append(ss[2].points, [2]float64{n, b.Exist.Seconds})
			}
		}
		if c := r.Ceiling; c != nil {
			if c.Available.ok() {
				ss[1].points = append(ss[1].points, [2]float64{n, c.Available.Seconds})
			}
			if c.Exist.ok() {
				ss[3].points = append(ss[3].points, [2]float64{n, c.Exist.Seconds})
			}
		}
	}
	return ss
}

// chart draws time-to-Ready and the ceiling's time-to-Available against N,
// with the times until the children existed dashed.
func chart(res *results) string {
	ss := timeToReadySeries(res)
	const width, height = 800.0, 440.0
	const left, right, top, bottom = 70.0, 300.0, 40.0, 60.0
	plotW, plotH := width-left-right, height-top-bottom
	minN, maxN, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, pt := range s.points {
			minN, maxN, maxY = math.Min(minN, pt[0]), math.Max(maxN, pt[0]), math.Max(maxY, pt[1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">Time to Ready (operator) and to Available (raw-client ceiling) against N</text>`+"\n", left)
	if math.IsInf(minN, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no completed burst measurement</text></svg>`+"\n", left, top+plotH/2)
		return b.String()
	}
	// x: logarithmic in N when N spans more than one value.
	logScale := maxN > minN
	xOf := func(n float64) float64 {
		if !logScale {
			return left + plotW/2
		}
		lo, hi := math.Log10(minN), math.Log10(maxN)
		pad := (hi - lo) * 0.08
		return left + (math.Log10(n)-lo+pad)/(hi-lo+2*pad)*plotW
	}
	yMax := benchkit.NiceCeil(maxY * 1.1)
	yOf := func(v float64) float64 { return top + plotH - v/yMax*plotH }
	// Axes and grid.
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, benchkit.TrimFloat(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, top+plotH)
	seen := map[float64]bool{}
	for _, s := range ss {
		for _, pt := range s.points {
			if seen[pt[0]] {
				continue
			}
			seen[pt[0]] = true
			x := xOf(pt[0])
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, top+plotH, x, top+plotH+5)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", x, top+plotH+18, pt[0])
		}
	}
	scale := "N (Websites)"
	if logScale {
		scale += ", logarithmic"
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+plotW/2, height-18, scale)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">seconds</text>`+"\n", top+plotH/2, top+plotH/2)
	// Series.
	for i, s := range ss {
		sort.Slice(s.points, func(a, c int) bool { return s.points[a][0] < s.points[c][0] })
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		if len(s.points) > 1 {
			var pts []string
			for _, pt := range s.points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(pt[0]), yOf(pt[1])))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		for _, pt := range s.points {
			x, y := xOf(pt[0]), yOf(pt[1])
			if s.dashed {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="white" stroke="%s" stroke-width="2"/>`+"\n", x-4, y-4, s.color)
			} else {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s"/>`+"\n", x, y, s.color)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%.1f s</text>`+"\n", x+8, y-6, s.color, pt[1])
		}
		// Legend.
		ly := top + 10 + float64(i)*22
		lx := left + plotW + 20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Load and ceiling: %s</text>`+"\n", left+plotW+20, top+110, html.EscapeString(res.Load.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Operator: %s</text>`+"\n", left+plotW+20, top+142, html.EscapeString(res.Operator.Client.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">%d CPUs, %s</text>`+"\n", left+plotW+20, top+126, res.Machine.NProc, html.EscapeString(res.Started.Format("2006-01-02")))
	b.WriteString("</svg>\n")
	return b.String()
}
