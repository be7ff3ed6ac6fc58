package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"example.com/platform-operator/api/v1alpha1"
)

// BackupList writes a BackupJob's backups, newest first, as its status
// lists them (all of the kind of its target, claims or VolumeSnapshots,
// but after a change of target): result, age (from the time the run was scheduled for), size,
// whether it is pinned, its restore drill's result and the retention rules
// that keep it. pinned says which backups carry the pin label now, read
// from the backups themselves, since status says so only after the
// operator's next reconcile; a backup not in it falls back to status.
func BackupList(w io.Writer, bj *v1alpha1.BackupJob, pinned map[string]bool, now time.Time) {
	fmt.Fprintf(w, "BackupJob %s/%s: %s\n", bj.Namespace, bj.Name, backupJobSource(bj))
	fmt.Fprintf(w, "Last success %s, next run %s\n", ago(bj.Status.LastSuccessfulTime, now), nextRun(bj, now))
	if c := meta.FindStatusCondition(bj.Status.Conditions, v1alpha1.BackupJobReadyCondition); c != nil && c.Status != "True" {
		fmt.Fprint(w, wrap(fmt.Sprintf("Not ready (%s): %s", c.Reason, c.Message), "  ", Width))
	}
	if len(bj.Status.Backups) == 0 {
		fmt.Fprintln(w, "No backups.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKUP\tRESULT\tAGE\tSIZE\tPINNED\tVERIFIED\tKEPT BY")
	for _, b := range bj.Status.Backups {
		size := "-"
		if b.Size != nil {
			size = b.Size.String()
		}
		pin, known := pinned[b.Name]
		if !known {
			pin = keptBy(b, v1alpha1.KeptAsPinned)
		}
		rules := make([]string, 0, len(b.KeptBy))
		for _, r := range b.KeptBy {
			rules = append(rules, string(r))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\t%s\n", b.Name, b.Result, Age(&b.ScheduledTime, now),
			size, pin, orDash(string(b.Verified)), orDash(strings.Join(rules, ",")))
	}
	_ = tw.Flush()
	if f := bj.Status.LastFailure; f != nil {
		fmt.Fprint(w, wrap(fmt.Sprintf("Last failure: %s (%s) %s: %s", f.Run, f.Reason, ago(&f.ScheduledTime, now), f.Message), "", Width))
	}
}

func keptBy(b v1alpha1.Backup, rule v1alpha1.RetentionRule) bool {
	for _, r := range b.KeptBy {
		if r == rule {
			return true
		}
	}
	return false
}

// backupJobSource says what bj backs up, and into what.
func backupJobSource(bj *v1alpha1.BackupJob) string {
	into := "new volumes"
	if bj.Spec.Target != nil && bj.Spec.Target.Snapshot != nil {
		into = "VolumeSnapshots"
	}
	if bj.Spec.Source.PostgresCluster != "" {
		return "PostgresCluster " + bj.Spec.Source.PostgresCluster + " into " + into
	}
	return "claim " + bj.Spec.Source.PersistentVolumeClaimName + " into " + into
}

func nextRun(bj *v1alpha1.BackupJob, now time.Time) string {
	switch {
	case bj.Spec.Suspend != nil && *bj.Spec.Suspend:
		return "none (suspended)"
	case bj.Status.NextScheduleTime == nil:
		return none
	}
	return "in " + span(bj.Status.NextScheduleTime.Sub(now))
}
