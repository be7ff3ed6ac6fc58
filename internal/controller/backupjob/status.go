package backupjob

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

const (
	// maxListedBackups is the MaxItems of status.backups.
	maxListedBackups = 500
)

// computeStatus is the status of bj from what the reconcile observed and
// did, at now. It reads the previous status only for what status carries
// forward by design: the schedule state (which sched moved), the running
// total of missed runs, and the transition times of unchanged conditions.
func computeStatus(bj *v1alpha1.BackupJob, obs *observation, sched scheduleResult, ret retentionResult, runProblem *cause, now time.Time) v1alpha1.BackupJobStatus {
	status := v1alpha1.BackupJobStatus{
		ObservedGeneration: bj.Generation,
		LastScheduleTime:   sched.lastScheduleTime,
		LastMissedTime:     sched.lastMissedTime,
		MissedRuns:         bj.Status.MissedRuns + sched.missedAdded,
		LastRunNow:         sched.lastRunNow,
		BackupCount:        int32(len(obs.backups)),
		Active:             activeReferences(bj, obs),
		Backups:            listBackups(obs.backups, ret),
	}
	if !sched.next.IsZero() && !ptr.Deref(bj.Spec.Suspend, false) && sched.problem == nil {
		status.NextScheduleTime = ptr.To(metav1.NewTime(sched.next))
	}
	status.LastSuccessfulTime = lastSuccess(obs, bj.Status.LastSuccessfulTime)
	status.LastFailure = lastFailure(obs, cmp.Or(obs.lastFailure, bj.Status.LastFailure))

	last := lastFinishedRun(obs, status.LastFailure)
	problem := degradedCause(bj, obs, sched, ret, runProblem, last)
	ready, degraded := readyCondition(bj, obs, sched, problem, last), degradedCondition(problem)
	reconciling, stalled := kit.KStatusConditions(ready, degraded, kstatusReasons)
	conditions := []metav1.Condition{ready, lastRunCondition(last), retentionCondition(ret), verifiedCondition(bj, obs), degraded, reconciling, stalled}
	status.Conditions = kit.MergeConditions(bj.Status.Conditions, bj.Generation, metav1.NewTime(now), conditions...)
	return status
}

// finishedRun is a finished run, from its backup or, when retention already
// deleted the backup, its Job, or when the Job is gone too (a failed run),
// status.lastFailure.
type finishedRun struct {
	name, reason, message string
	succeeded             bool
	scheduled             time.Time
}

// newer tells whether f is a later run than other (nil for none).
func (f finishedRun) newer(other *finishedRun) bool {
	return other == nil || f.scheduled.After(other.scheduled) || (f.scheduled.Equal(other.scheduled) && f.name > other.name)
}

// finishedRuns calls consider with every finished run that obs shows.
func finishedRuns(obs *observation, consider func(finishedRun)) {
	for _, b := range obs.backups {
		if b.result == v1alpha1.BackupSucceeded || b.result == v1alpha1.BackupFailed {
			consider(finishedRun{name: b.name, reason: b.reason, message: b.message, succeeded: b.result == v1alpha1.BackupSucceeded, scheduled: b.scheduled})
		}
	}
	for name, j := range obs.runJobs {
		if obs.backupNamed(name) != nil {
			continue
		}
		if finished, succeeded, message, _ := jobOutcome(j); finished {
			scheduled := j.CreationTimestamp.Time
			if t, err := time.Parse(time.RFC3339, j.Annotations[ScheduledTimeAnnotation]); err == nil {
				scheduled = t
			}
			consider(finishedRun{name: name, reason: v1alpha1.BackupJobJobFailedReason, message: message, succeeded: succeeded, scheduled: scheduled})
		}
	}
}

// lastFinishedRun is the most recent finished run: one that obs shows, or
// the failure status records (its backup and Job may be gone).
func lastFinishedRun(obs *observation, failure *v1alpha1.BackupRunFailure) *finishedRun {
	var last *finishedRun
	consider := func(f finishedRun) {
		if f.newer(last) {
			last = &f
		}
	}
	finishedRuns(obs, consider)
	if failure != nil {
		consider(finishedRun{name: failure.Run, reason: failure.Reason, message: failure.Message, scheduled: failure.ScheduledTime.Time})
	}
	return last
}

// lastFailure is the most recent failed run: one that obs shows, or the one
// status recorded before (previous), whose backup and Job retention and the
// Job history limit may have removed since.
func lastFailure(obs *observation, previous *v1alpha1.BackupRunFailure) *v1alpha1.BackupRunFailure {
	if previous != nil {
		// A run that failed may succeed after all: a snapshot ready after
		// its deadline.
		finishedRuns(obs, func(f finishedRun) {
			if f.succeeded && f.name == previous.Run {
				previous = nil
			}
		})
	}
	var newest *finishedRun
	if previous != nil {
		newest = &finishedRun{name: previous.Run, scheduled: previous.ScheduledTime.Time}
	}
	latest := previous
	finishedRuns(obs, func(f finishedRun) {
		if f.succeeded || !f.newer(newest) {
			return
		}
		newest = &f
		latest = &v1alpha1.BackupRunFailure{Run: f.name, ScheduledTime: metav1.NewTime(f.scheduled), Reason: cmp.Or(f.reason, v1alpha1.BackupJobJobFailedReason),
			Message: kit.TruncateMessage(cmp.Or(f.message, fmt.Sprintf("Run %s failed", f.name)))}
	})
	return latest
}

// lastSuccess is when the most recent successful run finished. The newest
// successful backup is never deleted by retention, but a person may delete
// it: the time already reported is then kept.
func lastSuccess(obs *observation, previous *metav1.Time) *metav1.Time {
	latest := previous
	for _, b := range obs.backups {
		if b.result == v1alpha1.BackupSucceeded && !b.finished.IsZero() && (latest == nil || b.finished.After(latest.Time)) {
			latest = ptr.To(metav1.NewTime(b.finished))
		}
	}
	return latest
}

func activeReferences(bj *v1alpha1.BackupJob, obs *observation) []corev1.ObjectReference {
	var refs []corev1.ObjectReference
	for _, name := range obs.activeRuns() {
		if j := obs.runJobs[name]; j != nil {
			refs = append(refs, corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: bj.Namespace, Name: name, UID: j.UID})
			continue
		}
		if b := obs.backupNamed(name); b != nil && b.kind == v1alpha1.SnapshotBackup {
			refs = append(refs, corev1.ObjectReference{APIVersion: "snapshot.storage.k8s.io/v1", Kind: "VolumeSnapshot", Namespace: bj.Namespace, Name: name, UID: b.object.GetUID()})
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name > refs[j].Name })
	if len(refs) > maxActiveRuns {
		refs = refs[:maxActiveRuns]
	}
	return refs
}

func listBackups(backups []*backup, ret retentionResult) []v1alpha1.Backup {
	var list []v1alpha1.Backup
	for _, b := range backups {
		if len(list) == maxListedBackups {
			break
		}
		entry := v1alpha1.Backup{
			Name:          b.name,
			Kind:          b.kind,
			ScheduledTime: metav1.NewTime(b.scheduled),
			Result:        b.result,
			Verified:      b.verified,
		}
		// A backup's size is told once it is complete: a claim's capacity,
		// known as soon as it is bound, would cost a status write per run
		// in the middle of a scheduled minute's burst, for a copy that has
		// not been made yet.
		if b.size != nil && b.result != v1alpha1.BackupRunning {
			entry.Size = ptr.To(b.size.DeepCopy())
		}
		if v, ok := ret.verdicts[b.name]; ok && !b.deleting() {
			entry.KeptBy = slices.Clone(v.KeptBy)
		}
		list = append(list, entry)
	}
	return list
}

// degradedCause is what needs a person, in order of importance, or nil.
func degradedCause(bj *v1alpha1.BackupJob, obs *observation, sched scheduleResult, ret retentionResult, runProblem *cause, last *finishedRun) *cause {
	switch {
	case sched.problem != nil:
		return sched.problem
	case snapshotTarget(bj) != nil && !obs.snapshotsServed:
		return &cause{Reason: v1alpha1.BackupJobSnapshotAPIMissingReason,
			Message: "spec.target.snapshot needs the VolumeSnapshot API (snapshot.storage.k8s.io/v1), which this cluster does not serve: install the external-snapshotter CRDs and controller, then restart the operator"}
	case obs.sourceProblem(bj, obs.postgres.served) != nil:
		return obs.sourceProblem(bj, obs.postgres.served)
	case runProblem != nil:
		return runProblem
	case len(ret.failed) > 0:
		return &cause{Reason: v1alpha1.BackupJobDeletionFailedReason, Message: kit.TruncateMessage(strings.Join(ret.failed, "; "))}
	case len(ret.blocked) > 0:
		return &cause{Reason: v1alpha1.BackupJobDeletionBlockedReason, Message: blockedMessage(ret.blocked)}
	case sched.tooMany || stillTooManyMissed(bj, last):
		return &cause{Reason: v1alpha1.BackupJobTooManyMissedRunsReason,
			Message: "More than 100 scheduled times passed without a run: was the operator stopped for long, or did a clock jump? Set spec.startingDeadlineSeconds, or check the clocks of the nodes and the API server"}
	}
	return nil
}

// stillTooManyMissed keeps TooManyMissedRuns, which only the reconcile that
// catches up can see, until a run finishes after it was reported: a person
// must get to see it.
func stillTooManyMissed(bj *v1alpha1.BackupJob, last *finishedRun) bool {
	prev := meta.FindStatusCondition(bj.Status.Conditions, v1alpha1.BackupJobDegradedCondition)
	if prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != v1alpha1.BackupJobTooManyMissedRunsReason {
		return false
	}
	return last == nil || !last.scheduled.After(prev.LastTransitionTime.Time)
}

func blockedMessage(blocked []string) string {
	return kit.TruncateMessage("Backups the retention policy no longer keeps were deleted but stay: " + strings.Join(blocked, ", ") +
		"; the operator looks again periodically")
}

// blocksReady tells whether a cause stops the BackupJob from doing its job
// (Ready=False), or only needs attention (Degraded=True alone).
// kstatusReasons: a spec or a source that keeps every run from starting,
// runs missed beyond the bound and backups whose deletion someone else
// blocks wait for a person. A BackupJob whose last run failed is in
// progress until a run succeeds.
var kstatusReasons = kit.KStatusReasons{Stalled: []string{
	v1alpha1.BackupJobInvalidScheduleReason, v1alpha1.BackupJobUnknownTimeZoneReason, v1alpha1.BackupJobSourceNotFoundReason,
	v1alpha1.BackupJobSnapshotAPIMissingReason, v1alpha1.BackupJobInvalidSpecReason, v1alpha1.BackupJobPrimaryFencingRefusedReason,
	v1alpha1.BackupJobSourceIsPostgresClusterReason, v1alpha1.BackupJobSourceNotMountableReason, v1alpha1.BackupJobObjectStoreMissingReason,
	v1alpha1.BackupJobTooManyMissedRunsReason, v1alpha1.BackupJobDeletionBlockedReason,
}}

func blocksReady(c *cause) bool {
	switch c.Reason {
	case v1alpha1.BackupJobInvalidScheduleReason, v1alpha1.BackupJobUnknownTimeZoneReason, v1alpha1.BackupJobSourceNotFoundReason,
		v1alpha1.BackupJobSnapshotAPIMissingReason, v1alpha1.BackupJobInvalidSpecReason, v1alpha1.BackupJobPrimaryFencingRefusedReason,
		v1alpha1.BackupJobSourceIsPostgresClusterReason, v1alpha1.BackupJobSourceNotMountableReason, v1alpha1.BackupJobObjectStoreMissingReason:
		return true
	}
	return false
}

func readyCondition(bj *v1alpha1.BackupJob, obs *observation, sched scheduleResult, problem *cause, last *finishedRun) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.BackupJobReadyCondition, Status: metav1.ConditionTrue}
	switch {
	case problem != nil && blocksReady(problem):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, problem.Reason, problem.Message
	case last != nil && !last.succeeded:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.BackupJobLastRunFailedReason
		c.Message = fmt.Sprintf("The most recent run, %s, failed; the schedule goes on", last.name)
	case ptr.Deref(bj.Spec.Suspend, false):
		c.Reason, c.Message = v1alpha1.BackupJobSuspendedReason, "spec.suspend is true: no run starts on schedule"
	case obs.postgres.waiting != nil && len(obs.activeRuns()) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, obs.postgres.waiting.Reason, obs.postgres.waiting.Message
	case len(obs.activeRuns()) > 0:
		c.Reason, c.Message = v1alpha1.BackupJobRunningReason, "Running: "+strings.Join(sortedNames(obs.activeRuns()), ", ")
		for _, m := range fenceMessages(obs) {
			c.Message += "; " + m
		}
		for _, b := range obs.running() {
			if b.message != "" {
				c.Message += "; " + b.message
			}
		}
		c.Message = kit.TruncateMessage(c.Message)
	default:
		c.Reason = v1alpha1.BackupJobScheduledReason
		c.Message = "Next run at " + stamp(sched.next)
	}
	return c
}

func lastRunCondition(last *finishedRun) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.BackupJobLastRunSucceededCondition}
	switch {
	case last == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.BackupJobNoRunYetReason, "No run has finished yet"
	case last.succeeded:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.BackupJobRunSucceededReason, fmt.Sprintf("Run %s succeeded", last.name)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, last.reason
		if c.Reason == "" {
			c.Reason = v1alpha1.BackupJobJobFailedReason
		}
		c.Message = last.message
		if c.Message == "" {
			c.Message = fmt.Sprintf("Run %s failed", last.name)
		}
	}
	c.Message = kit.TruncateMessage(c.Message)
	return c
}

func retentionCondition(ret retentionResult) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.BackupJobRetentionAppliedCondition}
	switch {
	case ret.skipped != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ret.skipped.Reason, ret.skipped.Message
	case len(ret.failed) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.BackupJobDeletionFailedReason, kit.TruncateMessage(strings.Join(ret.failed, "; "))
	case len(ret.blocked) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.BackupJobDeletionBlockedReason, blockedMessage(ret.blocked)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.BackupJobRetentionAppliedReason, "Only the backups the retention policy keeps exist"
	}
	if len(ret.storeKept) > 0 {
		names := slices.Sorted(slices.Values(ret.storeKept))
		c.Message = kit.TruncateMessage(fmt.Sprintf("%s. Kept all the same: %d object-store backups the policy no longer keeps (%s); "+
			"the PostgresCluster's spec.backup.retention deletes backups from the object store, not the BackupJob's", c.Message, len(names), strings.Join(names, ", ")))
	}
	if len(ret.inherited) > 0 {
		names := slices.Sorted(slices.Values(ret.inherited))
		c.Message = kit.TruncateMessage(fmt.Sprintf("%s. Left alone: %d backups an earlier BackupJob of this name made (%s); "+
			"to hand one over, set its annotation %s to this BackupJob's UID", c.Message, len(names), strings.Join(names, ", "), MadeByAnnotation))
	}
	return c
}

// verifiedCondition reports the most recent drill that finished: that of
// the newest backup that has a drill result.
func verifiedCondition(bj *v1alpha1.BackupJob, obs *observation) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.BackupJobVerifiedCondition, Status: metav1.ConditionUnknown}
	if bj.Spec.Verify == nil {
		c.Reason, c.Message = v1alpha1.BackupJobVerifyNotConfiguredReason, "spec.verify is not set: backups are not checked by restore drills"
		return c
	}
	for _, b := range obs.backups {
		switch b.verified {
		case v1alpha1.VerificationPassed:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.BackupJobVerifyPassedReason, fmt.Sprintf("Backup %s was restored and checked", b.name)
			return c
		case v1alpha1.VerificationFailed:
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.BackupJobVerifyFailedReason, kit.TruncateMessage(b.verifiedMessage)
			if c.Message == "" {
				c.Message = fmt.Sprintf("The restore drill of backup %s failed", b.name)
			}
			return c
		}
	}
	c.Reason, c.Message = v1alpha1.BackupJobVerifyPendingReason, "No restore drill has finished yet"
	return c
}

func degradedCondition(problem *cause) metav1.Condition {
	if problem == nil {
		return metav1.Condition{Type: v1alpha1.BackupJobDegradedCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.BackupJobAsExpectedReason, Message: "Nothing needs attention"}
	}
	return metav1.Condition{Type: v1alpha1.BackupJobDegradedCondition, Status: metav1.ConditionTrue, Reason: problem.Reason, Message: kit.TruncateMessage(problem.Message)}
}

func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}
