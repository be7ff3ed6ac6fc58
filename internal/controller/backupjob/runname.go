package backupjob

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// maxNameLength is the longest name a run's Job may have: the Job
// controller copies it into its pods' job-name label, whose values are at
// most 63 characters.
const maxNameLength = 63

// RunName is the name of the run of BackupJob backupJob scheduled at
// scheduled: of its Job, and of the claim or snapshot it makes. It is
// derived from the scheduled time alone, so that a second leader, a retry
// or a restart that handles the same scheduled time finds the run that
// exists instead of starting another (the create is refused with
// AlreadyExists). The built-in CronJob appends the scheduled time in
// minutes; @every 10s needs seconds, so this appends Unix seconds: NAME-
// followed by 10 digits until the year 2286. The CRD limits BackupJob names
// to 52 characters so that the result is NAME-UNIXSECONDS, at most 63.
func RunName(backupJob string, scheduled time.Time) string {
	return fitName(backupJob, "-"+strconv.FormatInt(scheduled.Unix(), 10))
}

// isRunName tells whether name is RunName(backupJob, t) for some t.
func isRunName(backupJob, name string) bool {
	_, ok := runTime(backupJob, name)
	return ok
}

// DrillName is the name of the restore drill of the backup made by the run
// scheduled at scheduled: of the drill's claim and Job.
func DrillName(backupJob string, scheduled time.Time) string {
	return fitName(backupJob, "-"+strconv.FormatInt(scheduled.Unix(), 10)+"-verify")
}

// fitName returns name+suffix if it fits in maxNameLength, else a prefix of
// name, a hash of the whole name and the suffix, so that two long names
// with the same prefix still give different results.
func fitName(name, suffix string) string {
	if len(name)+len(suffix) <= maxNameLength {
		return name + suffix
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name)) // a hash.Hash never returns an error
	hash := fmt.Sprintf("-%08x", h.Sum32())
	prefix := strings.TrimRight(name[:max(0, maxNameLength-len(hash)-len(suffix))], "-.")
	return prefix + hash + suffix
}
