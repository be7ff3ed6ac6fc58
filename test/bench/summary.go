package main

import (
	"fmt"
	"strings"
)

// summary is what the benchmark prints at the end.
func summary(res *results) string {
	var b strings.Builder
	b.WriteString("\n== Results\n")
	for _, c := range res.Checks {
		fmt.Fprintf(&b, "%-9s N=%-5d %-70s %-60s met? %s\n", c.Scenario, c.N, c.Target, c.Figure, c.Met)
	}
	for _, r := range res.Runs {
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "N=%d error: %s\n", r.N, firstLine(e))
		}
	}
	return b.String()
}
