package view

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Width is the terminal width the views fit.
const Width = 80

// none stands for a value that is not known or not set, as kubectl shows
// it.
const none = "<none>"

// Age is how long before now t was, as kubectl get shows it ("5m", "3d"),
// or <none> for an unset time.
func Age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return none
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// Bytes is a size in bytes with a binary unit, such as 16 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// orNone is s, or <none> when it is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// wrap breaks text into lines of at most width columns after indent,
// at spaces; a word longer than a line stays whole on its own line.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	if line != indent {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// ago is how long ago t was, "5m ago", or never for an unset time.
func ago(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return Age(t, now) + " ago"
}

// span is a duration as kubectl shows ages; a negative one (a time
// already past, an operator behind) is 0s.
func span(d time.Duration) string {
	return duration.HumanDuration(max(d, 0))
}
