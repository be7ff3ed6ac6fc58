package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

// PostgresStatus writes one screen on a PostgresCluster: what it is doing,
// its primary, each instance's role, readiness, timeline, WAL positions and
// lag, the BackupJobs that back it up, and its conditions. backups are the
// BackupJobs whose source is the cluster. It shows what the status says,
// as the operator last observed it; nothing is read from the databases.
func PostgresStatus(w io.Writer, pg *v1alpha1.PostgresCluster, backups []v1alpha1.BackupJob, now time.Time) {
	s := pg.Status
	fmt.Fprintf(w, "PostgresCluster %s/%s: %s\n", pg.Namespace, pg.Name, orNone(string(s.Phase)))
	if ready := meta.FindStatusCondition(s.Conditions, v1alpha1.PostgresReadyCondition); ready != nil && ready.Status != "True" && ready.Message != "" {
		fmt.Fprint(w, wrap("Not ready: "+ready.Message, "  ", Width))
	}
	primary := orNone(s.CurrentPrimary)
	if s.TargetPrimary != "" && s.TargetPrimary != s.CurrentPrimary {
		primary += ", being handed to " + s.TargetPrimary
	}
	fmt.Fprintf(w, "Primary:     %s\n", primary)
	fmt.Fprintf(w, "Instances:   %s ready of %d, synchronous %d (%s)\n", orNone(s.ReadyInstances),
		pg.Spec.Instances, pg.Spec.Synchronous, durability(pg))
	if s.WriteService != "" || s.ReadService != "" {
		fmt.Fprintf(w, "Services:    %s (writes), %s (reads)\n", orNone(s.WriteService), orNone(s.ReadService))
	}
	if len(pg.Spec.FencedInstances) > 0 {
		fmt.Fprintf(w, "Fenced:      %s (spec.fencedInstances)\n", strings.Join(pg.Spec.FencedInstances, ", "))
	}
	if fence := pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation]; fence != "" {
		fmt.Fprintf(w, "Backup fence: %s, for run %s\n", fence, orNone(pg.Annotations[v1alpha1.PostgresBackupFenceByAnnotation]))
	}
	if pg.Spec.Hibernate {
		fmt.Fprintln(w, "Hibernate:   true (every pod deleted, claims kept)")
	}
	if t := s.TLS; t != nil && t.NotAfter != nil {
		fmt.Fprintf(w, "TLS:         certificate of %s, ends %s (%s)\n", orNone(t.Issuer), t.NotAfter.UTC().Format(time.DateOnly), untilEnd(t.NotAfter.Time, now))
	}
	if b := pg.Spec.Backup; b != nil {
		// The label ends the indent of the first line.
		text := wrap(archiving(pg, now), "             ", Width)
		fmt.Fprint(w, "Archiving:"+strings.TrimPrefix(text, "          "))
	}
	if s.ObservedGeneration != 0 && s.ObservedGeneration < pg.Generation {
		fmt.Fprintf(w, "Status is of generation %d; the spec is at %d: the operator has not caught up\n",
			s.ObservedGeneration, pg.Generation)
	}
	fmt.Fprintln(w)
	postgresInstances(w, s.Instances)
	fmt.Fprintln(w)
	postgresBackups(w, backups, now)
	fmt.Fprintln(w)
	Conditions(w, s.Conditions, pg.Generation, now)
}

// archiving says where continuous archiving stands: the last WAL file
// archived and when, what waits, and the failure when the last try failed.
func archiving(pg *v1alpha1.PostgresCluster, now time.Time) string {
	store := pg.Spec.Backup.ObjectStore
	where := fmt.Sprintf("to s3://%s at %s", store.Bucket, store.Endpoint)
	a := pg.Status.Archiving
	if a == nil || (a.LastArchivedWAL == "" && a.LastFailedWAL == "") {
		return where + ": nothing archived yet"
	}
	text := fmt.Sprintf("%s: %s archived %s, %d waiting", where, orNone(a.LastArchivedWAL), ago(a.LastArchivedAt, now), a.PendingWAL)
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresContinuousArchivingCondition); c != nil && c.Reason == v1alpha1.PostgresArchiveFailingReason {
		text += fmt.Sprintf("; FAILING since %s: %s", ago(a.LastFailedAt, now), orNone(a.LastFailure))
	}
	return text
}

func durability(pg *v1alpha1.PostgresCluster) string {
	if pg.Spec.Synchronous == 0 {
		return "asynchronous"
	}
	if pg.Spec.DataDurability == "" {
		return string(v1alpha1.DurabilityRequired)
	}
	return string(pg.Spec.DataDurability)
}

// postgresInstances is the table of instances. The LSN column is the
// primary's current position, a replica's replayed one: where each
// stands.
func postgresInstances(w io.Writer, instances []v1alpha1.PostgresInstanceStatus) {
	if len(instances) == 0 {
		fmt.Fprintln(w, "Instances: none reported yet")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tROLE\tREADY\tTL\tLSN\tLAG\tSTATE")
	var messages []string
	for _, i := range instances {
		lsn, lag := i.ReplayedLSN, Bytes(i.LagBytes)
		if i.Role == v1alpha1.PostgresPrimaryRole {
			lsn, lag = i.ReceivedLSN, "-"
		}
		if i.Role == "" {
			lag = "-"
		}
		timeline := "-"
		if i.Timeline != 0 {
			timeline = fmt.Sprint(i.Timeline)
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%s\t%s\n", i.Name, orDash(i.Role), i.Ready, timeline, orDash(lsn), lag, instanceState(i))
		// A ready instance's message says what its row does already.
		if i.Message != "" && (!i.Ready || i.Fenced) {
			messages = append(messages, i.Name+": "+i.Message)
		}
	}
	_ = tw.Flush()
	for _, m := range messages {
		fmt.Fprint(w, wrap(m, "  ", Width))
	}
}

// instanceState is a word for what is special about an instance.
func instanceState(i v1alpha1.PostgresInstanceStatus) string {
	switch {
	case i.Fenced && i.BackupFence != "":
		if i.CleanShutdown {
			return "fenced for backup, stopped cleanly"
		}
		return "fenced for backup"
	case i.Fenced:
		return "fenced"
	case i.Role == "":
		return "not reporting"
	case !i.Ready:
		return "not ready"
	case i.Role == v1alpha1.PostgresPrimaryRole:
		return "accepting writes"
	}
	return "streaming"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// postgresBackups says, per BackupJob of the cluster, how its backups
// stand: the last success, the newest backup and its result, the restore
// drill's verdict and the next run.
func postgresBackups(w io.Writer, backups []v1alpha1.BackupJob, now time.Time) {
	if len(backups) == 0 {
		fmt.Fprintln(w, "Backups: no BackupJob has this cluster as its source")
		return
	}
	fmt.Fprintln(w, "Backups:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  BACKUPJOB\tLAST SUCCESS\tNEWEST\tBACKUPS\tVERIFIED\tNEXT RUN")
	for _, bj := range backups {
		newest := none
		if len(bj.Status.Backups) > 0 {
			newest = string(bj.Status.Backups[0].Result)
		}
		verified := drill(meta.FindStatusCondition(bj.Status.Conditions, v1alpha1.BackupJobVerifiedCondition))
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", bj.Name, ago(bj.Status.LastSuccessfulTime, now), newest,
			bj.Status.BackupCount, verified, nextRun(&bj, now))
	}
	_ = tw.Flush()
	for _, bj := range backups {
		if f := bj.Status.LastFailure; f != nil {
			fmt.Fprint(w, wrap(fmt.Sprintf("%s: last failure %s (%s) %s: %s", bj.Name, f.Run, f.Reason,
				ago(&f.ScheduledTime, now), f.Message), "  ", Width))
		}
	}
}

// drill is the verdict of a BackupJob's latest restore drill, from its
// Verified condition.
func drill(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return "passed"
	case c.Status == metav1.ConditionFalse:
		return "FAILED"
	case c.Reason == v1alpha1.BackupJobVerifyNotConfiguredReason:
		return "no drills"
	}
	return "pending"
}

// untilEnd says how long until end, in days, or that it has passed.
func untilEnd(end, now time.Time) string {
	if !end.After(now) {
		return "ended"
	}
	return fmt.Sprintf("in %dd", int(end.Sub(now).Hours()/24))
}
