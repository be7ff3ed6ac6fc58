package main

import (
	"fmt"
	"html"
	"math"
	"strings"

	"example.com/platform-operator/test/bench/benchkit"
)

func overTimeFile(n int) string { return fmt.Sprintf("ready-over-time-n%d.svg", n) }

// timelineSeries is one line of the chart over time: when each share of
// a wait's objects got there.
type timelineSeries struct {
	name, color string
	dashed      bool
	w           waitResult
}

// overTimeSeries are the waits of one N drawn over time: the operator's,
// the ceiling's and the Deployments-alone ceiling's, when they ran.
func overTimeSeries(r *runResult) []timelineSeries {
	var ss []timelineSeries
	if b := r.Burst; b != nil {
		ss = append(ss, timelineSeries{"operator: Websites Ready", "#1f77b4", false, b.Ready},
			timelineSeries{"operator: Deployments and Services exist", "#1f77b4", true, b.Exist})
	}
	if c := r.Ceiling; c != nil {
		ss = append(ss, timelineSeries{"ceiling: Deployments Available", "#ff7f0e", false, c.Available},
			timelineSeries{"ceiling: Deployments and Services exist", "#ff7f0e", true, c.Exist})
	}
	if c := r.CeilingDeployments; c != nil {
		ss = append(ss, timelineSeries{"ceiling, Deployments alone: Available", "#2ca02c", false, c.Available},
			timelineSeries{"ceiling, Deployments alone: exist", "#2ca02c", true, c.DeploymentsExist})
	}
	return ss
}

// overTimeChart draws, for one N, how many Websites were Ready and how many
// of the ceiling's Deployments were Available over time since the first
// create, with the times their children existed dashed.
func overTimeChart(res *results, r *runResult) string {
	ss := overTimeSeries(r)
	const width, height = 820.0, 440.0
	const left, right, top, bottom = 70.0, 320.0, 40.0, 60.0
	plotW, plotH := width-left-right, height-top-bottom
	maxX := 0.0
	for _, s := range ss {
		if len(s.w.Timeline) > 0 {
			maxX = math.Max(maxX, s.w.Timeline[len(s.w.Timeline)-1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">N = %d: share done against seconds since the first create</text>`+"\n", left, r.N)
	if maxX == 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no timeline recorded (a run that did not complete, or results from before timelines)</text></svg>`+"\n", left, top+plotH/2)
		return b.String()
	}
	xMax := benchkit.NiceCeil(maxX * 1.05)
	xOf := func(v float64) float64 { return left + v/xMax*plotW }
	yOf := func(share float64) float64 { return top + plotH - share*plotH }
	for i := 0; i <= 4; i++ {
		share := float64(i) / 4
		y := yOf(share)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", left-6, y+4, share*100)
	}
	for i := 0; i <= 5; i++ {
		v := xMax * float64(i) / 5
		x := xOf(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, top+plotH, x, top+plotH+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+plotH+18, benchkit.TrimFloat(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, top+plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds since the first create</text>`+"\n", left+plotW/2, height-18)
	for i, s := range ss {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		if n := len(s.w.Timeline); n > 0 {
			pts := []string{fmt.Sprintf("%.1f,%.1f", xOf(0), yOf(0))}
			for k, t := range s.w.Timeline {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(t), yOf(float64(k+1)/float64(n))))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		}
		ly := top + 10 + float64(i)*22
		lx := left + plotW + 20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s (%s)</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name), html.EscapeString(s.w.String()))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Load and ceiling: %s</text>`+"\n", left+plotW+20, top+160, html.EscapeString(res.Load.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">Operator: %s</text>`+"\n", left+plotW+20, top+176, html.EscapeString(res.Operator.Client.String()))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#555">%d CPUs, %s</text>`+"\n", left+plotW+20, top+192, res.Machine.NProc, html.EscapeString(res.Started.Format("2006-01-02")))
	b.WriteString("</svg>\n")
	return b.String()
}
