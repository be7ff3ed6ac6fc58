package view

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	websitev1 "example.com/platform-operator/api/v1"
)

// WebsiteStatus writes what `kubectl get website` shows, then, when the
// Website is not Ready, why: the Ready condition's reason and message and,
// when Degraded is True, the cause that needs a person, then every
// condition.
func WebsiteStatus(w io.Writer, ws *websitev1.Website, now time.Time) {
	ready := meta.FindStatusCondition(ws.Status.Conditions, websitev1.ReadyCondition)
	reason := none
	if ready != nil {
		reason = ready.Reason
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tIMAGE\tREADY\tSTATUS\tURL\tAGE")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ws.Name, ws.Spec.Image, orNone(ws.Status.Ready), reason,
		orNone(ws.Status.URL), Age(&ws.CreationTimestamp, now))
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprint(w, wrap(WebsiteVerdict(ws), "", Width))
	fmt.Fprintln(w)
	Conditions(w, ws.Status.Conditions, ws.Generation, now)
}

// WebsiteVerdict is one sentence on whether the Website serves, and why
// not when it does not.
func WebsiteVerdict(ws *websitev1.Website) string {
	ready := meta.FindStatusCondition(ws.Status.Conditions, websitev1.ReadyCondition)
	degraded := meta.FindStatusCondition(ws.Status.Conditions, websitev1.DegradedCondition)
	switch {
	case ready == nil:
		return "Not Ready: the operator has not reported on it yet (is it running, and does it serve this namespace?)."
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration < ws.Generation:
		return fmt.Sprintf("Not known: the status is of generation %d, the spec is at %d; the operator has not acted on the change yet.",
			ready.ObservedGeneration, ws.Generation)
	case ready.Status == "True":
		return fmt.Sprintf("Ready (%s): serving at %s.", ready.Reason, orNone(ws.Status.URL))
	case degraded != nil && degraded.Status == "True":
		return fmt.Sprintf("Not Ready because %s: %s", degraded.Reason, degraded.Message)
	}
	return fmt.Sprintf("Not Ready (%s): %s", ready.Reason, ready.Message)
}
