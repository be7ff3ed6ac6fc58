package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a BackupJob. Each is always present once the operator
// has seen the BackupJob, so that `kubectl wait` and alerts never have to
// guess what a missing condition means. The identifiers carry the kind's
// name because other kinds of this package have conditions of the same
// type (Ready, Degraded) with their own reasons.
const (
	// BackupJobReadyCondition is True when the BackupJob does its job: its
	// schedule and time zone are valid, its source exists, its target can be
	// made, and its most recent run did not fail. Polarity: True is good.
	BackupJobReadyCondition = "Ready"

	// BackupJobLastRunSucceededCondition is True when the most recent
	// finished run succeeded, False when it failed, and Unknown before the
	// first run finishes. Polarity: True is good.
	BackupJobLastRunSucceededCondition = "LastRunSucceeded"

	// BackupJobRetentionAppliedCondition is True when every backup that the
	// retention policy no longer keeps has been deleted. Polarity: True is
	// good.
	BackupJobRetentionAppliedCondition = "RetentionApplied"

	// BackupJobVerifiedCondition is True when the most recent restore drill
	// passed, False when it failed, and Unknown when none ran yet or
	// spec.verify is not set. Polarity: True is good.
	BackupJobVerifiedCondition = "Verified"

	// BackupJobDegradedCondition is True when something needs a person's
	// attention; its reason and message name the cause. Polarity: True is
	// bad.
	BackupJobDegradedCondition = "Degraded"
)

// Reasons of the Ready condition. When Ready is False because of a cause
// that Degraded reports, it carries Degraded's reason.
const (
	// BackupJobScheduledReason (Ready=True): no run is in progress; the next
	// one is due at status.nextScheduleTime.
	BackupJobScheduledReason = "Scheduled"

	// BackupJobRunningReason (Ready=True): a run is in progress.
	BackupJobRunningReason = "Running"

	// BackupJobSuspendedReason (Ready=True): spec.suspend is true; no run
	// starts. Nothing is wrong: a person chose it.
	BackupJobSuspendedReason = "Suspended"

	// BackupJobLastRunFailedReason (Ready=False): the most recent run failed;
	// LastRunSucceeded says why. The schedule goes on.
	BackupJobLastRunFailedReason = "LastRunFailed"

	// BackupJobNoReadyReplicaReason (Ready=False, Degraded=False): a run of a
	// PostgresCluster with replicas is due but none is ready to be fenced
	// (the cluster starts or fails over): the run waits, and starts when
	// one is.
	BackupJobNoReadyReplicaReason = "NoReadyReplica"

	// BackupJobFenceHeldReason (Ready=False, Degraded=False): a run of a
	// PostgresCluster is due while another run (of another BackupJob, or an
	// earlier one of this) fences an instance of it: one run at a time per
	// cluster, the run waits.
	BackupJobFenceHeldReason = "FenceHeld"
)

// Reasons of the LastRunSucceeded condition.
const (
	// BackupJobRunSucceededReason (LastRunSucceeded=True): the run's Job
	// succeeded and its backup is complete.
	BackupJobRunSucceededReason = "Succeeded"

	// BackupJobNoRunYetReason (LastRunSucceeded=Unknown): no run has finished
	// yet.
	BackupJobNoRunYetReason = "NoRunYet"

	// BackupJobJobFailedReason (LastRunSucceeded=False): the run's Job
	// failed (its backoff limit or deadline was reached).
	BackupJobJobFailedReason = "JobFailed"

	// BackupJobSnapshotFailedReason (LastRunSucceeded=False): the run's
	// VolumeSnapshot reported an error.
	BackupJobSnapshotFailedReason = "SnapshotFailed"

	// BackupJobReplacedReason (LastRunSucceeded=False): the run was stopped
	// because the next one was due and concurrencyPolicy is Replace.
	BackupJobReplacedReason = "Replaced"

	// BackupJobFenceTimeoutReason (LastRunSucceeded=False): the instance a
	// run fenced did not report a clean shutdown of PostgreSQL in time (or
	// stopped being the run's to snapshot: gone, promoted), so no snapshot
	// was taken; the fence was removed.
	BackupJobFenceTimeoutReason = "FenceTimeout"
)

// Reasons of the RetentionApplied condition.
const (
	// BackupJobRetentionAppliedReason (RetentionApplied=True): only the
	// backups the policy keeps exist.
	BackupJobRetentionAppliedReason = "Applied"

	// BackupJobDeletionBlockedReason (RetentionApplied=False, Degraded=True):
	// a backup the policy no longer keeps was deleted but stays, for example
	// because someone else's finalizer holds it. The message names it. The
	// operator rechecks it periodically, not in a hot loop.
	BackupJobDeletionBlockedReason = "DeletionBlocked"

	// BackupJobDeletionFailedReason (RetentionApplied=False, Degraded=True):
	// the API server refused to delete a backup, for example for lack of
	// RBAC rights or because a webhook refused it. The operator retries with
	// backoff.
	BackupJobDeletionFailedReason = "DeletionFailed"
)

// Reasons of the Verified condition.
const (
	// BackupJobVerifyPassedReason (Verified=True): the most recent drill
	// restored a backup and the verify Job succeeded on it.
	BackupJobVerifyPassedReason = "DrillPassed"

	// BackupJobVerifyFailedReason (Verified=False): the most recent drill
	// could not restore the backup, or the verify Job failed. The message
	// names the backup.
	BackupJobVerifyFailedReason = "DrillFailed"

	// BackupJobVerifyPendingReason (Verified=Unknown): no drill has finished
	// yet.
	BackupJobVerifyPendingReason = "NoDrillYet"

	// BackupJobVerifyNotConfiguredReason (Verified=Unknown): spec.verify is
	// not set, so backups are never checked.
	BackupJobVerifyNotConfiguredReason = "NotConfigured"
)

// Reasons of the Degraded condition; when Ready is False for the same cause,
// it carries the same reason.
const (
	// BackupJobAsExpectedReason (Degraded=False): nothing is wrong.
	BackupJobAsExpectedReason = "AsExpected"

	// BackupJobInvalidScheduleReason (Degraded=True, Ready=False):
	// spec.schedule passed the API server's shape check but is not a valid
	// schedule (minute 61, February 30, ...). No run starts until it
	// changes.
	BackupJobInvalidScheduleReason = "InvalidSchedule"

	// BackupJobUnknownTimeZoneReason (Degraded=True, Ready=False):
	// spec.timeZone is not in the operator's time zone database. No run
	// starts until it changes.
	BackupJobUnknownTimeZoneReason = "UnknownTimeZone"

	// BackupJobSourceNotFoundReason (Degraded=True, Ready=False): the claim
	// or PostgresCluster named in spec.source does not exist. Runs are not
	// started and count as missed.
	BackupJobSourceNotFoundReason = "SourceNotFound"

	// BackupJobSnapshotAPIMissingReason (Degraded=True, Ready=False): the
	// target is a snapshot but the cluster does not serve the VolumeSnapshot
	// API.
	BackupJobSnapshotAPIMissingReason = "SnapshotAPIMissing"

	// BackupJobInvalidSpecReason (Degraded=True, Ready=False): the API server
	// refused a Job or claim built from the spec. The operator does not retry
	// until the spec changes.
	BackupJobInvalidSpecReason = "InvalidSpec"

	// BackupJobRunConflictReason (Degraded=True): an object with a run's
	// name exists and is not the BackupJob's. The operator leaves it
	// untouched and does not start that run.
	BackupJobRunConflictReason = "RunConflict"

	// BackupJobPrimaryFencingRefusedReason (Degraded=True, Ready=False): the
	// PostgresCluster has a single instance, its primary, and
	// spec.source.allowPrimaryFencing is not set: no run fences it (writes
	// would stop), runs are skipped and counted as missed, and the cluster
	// is not touched.
	BackupJobPrimaryFencingRefusedReason = "PrimaryFencingRefused"

	// BackupJobSourceIsPostgresClusterReason (Degraded=True, Ready=False):
	// the source claim belongs to a PostgresCluster: a copy of a running
	// database's files is not a backup. Name the cluster in
	// spec.source.postgresCluster.
	BackupJobSourceIsPostgresClusterReason = "SourceIsPostgresCluster"

	// BackupJobSourceNotMountableReason (Degraded=True, Ready=False): the
	// source claim is ReadWriteOncePod and the target a new volume: the
	// copy Job's pod could never mount it beside the pod that uses it. Use
	// a snapshot target.
	BackupJobSourceNotMountableReason = "SourceNotMountable"

	// BackupJobObjectStoreMissingReason (Degraded=True, Ready=False): the
	// target is objectStore but the source PostgresCluster has no
	// spec.backup.objectStore to put base backups in. Runs are not started
	// and count as missed.
	BackupJobObjectStoreMissingReason = "ObjectStoreMissing"

	// BackupJobTooManyMissedRunsReason (Degraded=True): more than 100
	// scheduled times passed without a run, which points at a stopped
	// operator or a clock that jumped. Set startingDeadlineSeconds, or check
	// the clocks of the nodes and the API server.
	BackupJobTooManyMissedRunsReason = "TooManyMissedRuns"
)

// GetConditions returns the status's conditions.
func (s *BackupJobStatus) GetConditions() []metav1.Condition { return s.Conditions }

// GetObservedGeneration returns the generation the status describes.
func (s *BackupJobStatus) GetObservedGeneration() int64 { return s.ObservedGeneration }
