package backupjob

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// Labels and annotations on the objects of a BackupJob's runs and drills.
// Backups outlive their Jobs (history is bounded) and their BackupJob
// (deletionPolicy Retain), so everything status says about a backup is
// read from the backup itself: which run made it, when it was scheduled,
// how the run ended and how its drill ended.
const (
	// RunLabel names the run that made an object: its Job and its claim,
	// snapshot or object-store record. Its value is the run's name,
	// RunName.
	RunLabel = "example.com/run"

	// DrillLabel marks a restore drill's claim and Job; its value is the
	// name of the backup the drill restores.
	DrillLabel = "example.com/drill"

	// ResultLabel, on a backup, is how its run ended (Succeeded or Failed),
	// written once the run's Job finished so that the result survives the
	// Job. A backup without it is a run in progress.
	ResultLabel = v1alpha1.BackupResultLabel

	// ScheduledTimeAnnotation, on a run's objects, is the run's scheduled
	// time (RFC 3339), by which retention buckets the backup.
	ScheduledTimeAnnotation = "example.com/scheduled-time"

	// MadeByAnnotation, on a backup, is the UID of the BackupJob whose run
	// made it. A BackupJob deleted with deletionPolicy Retain leaves its
	// backups labelled with its name: a new BackupJob of the same name (of
	// another source, perhaps, and another retention policy) lists them but
	// never deletes them. Set it to a BackupJob's UID to hand backups over
	// to it.
	MadeByAnnotation = "example.com/backupjob-uid"

	// JobStartedAnnotation, on a backup claim made by an earlier version,
	// is the UID of its run's Job: a Job gone before its result was
	// recorded (a TTL controller removed it while the operator was away)
	// is not made again, which would copy into a backup that may be
	// complete, under the time of its first run. status.active records it
	// now, in the status write the run makes anyway.
	JobStartedAnnotation = "example.com/job-uid"

	// RunNowAnnotation, on the objects of a run that spec.runNow asked for,
	// is that spec.runNow value: a retry finds the run it already started.
	RunNowAnnotation = "example.com/run-now"

	// ResultReasonAnnotation, on a failed backup, says why it failed (a
	// reason of the LastRunSucceeded condition) and ResultMessageAnnotation
	// says it in words.
	ResultReasonAnnotation  = "example.com/result-reason"
	ResultMessageAnnotation = "example.com/result-message"

	// VerifiedAnnotation, on a backup, is the result of its restore drill
	// (Passed or Failed), kept after the drill's claim and Job are gone.
	VerifiedAnnotation = "example.com/verified"
	// VerifiedMessageAnnotation says why a drill failed.
	VerifiedMessageAnnotation = "example.com/verified-message"

	// Finalizer is put on a BackupJob whose deletionPolicy is Delete, so
	// that its deletion deletes its backups (except pinned ones) first.
	Finalizer = "example.com/backupjob-backups"
)

// runLabels are the labels of a run's Job and backup.
func runLabels(backupJob, run string) map[string]string {
	l := children.ManagedLabels()
	l[v1alpha1.BackupJobLabel] = backupJob
	l[RunLabel] = run
	return l
}

// drillLabels are the labels of a drill's claim and Job.
func drillLabels(backupJob, backup string) map[string]string {
	l := children.ManagedLabels()
	l[v1alpha1.BackupJobLabel] = backupJob
	l[DrillLabel] = backup
	return l
}

// objectsOf selects the operator's objects of one BackupJob: its runs'
// Jobs and backups, and its drills' claims and Jobs.
func objectsOf(backupJob string) labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.BackupJobLabel, selection.Equals, []string{backupJob})
	if err != nil {
		// Names of BackupJobs are valid label values: the CRD limits them
		// to 52 characters of a DNS label.
		return labels.Nothing()
	}
	return children.ManagedSelector().Add(*req)
}
