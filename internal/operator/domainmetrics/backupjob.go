package domainmetrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

var (
	backupJobLastSuccess = prometheus.NewDesc("platform_operator_backupjob_last_success_timestamp_seconds",
		"When the most recent successful run of a BackupJob finished (status.lastSuccessfulTime), in seconds since the epoch; absent before the first success.", objectLabels, nil)
	backupJobLastFailure = prometheus.NewDesc("platform_operator_backupjob_last_failure_timestamp_seconds",
		"The scheduled time of the most recent failed run of a BackupJob (status.lastFailure.scheduledTime), in seconds since the epoch; absent when none failed.", objectLabels, nil)
	backupJobLastSchedule = prometheus.NewDesc("platform_operator_backupjob_last_schedule_timestamp_seconds",
		"The scheduled time of the most recent scheduled run of a BackupJob (status.lastScheduleTime), in seconds since the epoch; absent before the first.", objectLabels, nil)
	backupJobNextSchedule = prometheus.NewDesc("platform_operator_backupjob_next_schedule_timestamp_seconds",
		"When the next run of a BackupJob is due (status.nextScheduleTime), in seconds since the epoch; absent while it is suspended or its schedule is invalid.", objectLabels, nil)
	backupJobBackups = prometheus.NewDesc("platform_operator_backupjob_backups",
		"Backups of a BackupJob that exist, successful or not (status.backupCount).", objectLabels, nil)
	backupJobMissedRuns = prometheus.NewDesc("platform_operator_backupjob_missed_runs",
		"Scheduled times of a BackupJob that got no run since it was created (status.missedRuns).", objectLabels, nil)
	backupJobLastDrill = prometheus.NewDesc("platform_operator_backupjob_last_drill",
		"Result of a BackupJob's most recent restore drill, from its Verified condition: 1 for the result it had (Passed, Failed, or None when no drill finished or none is configured), 0 for the others.",
		[]string{"namespace", "name", "result"}, nil)
)

// Results of a restore drill, the values of platform_operator_backupjob_last_drill's result label.
const (
	drillPassed = "Passed"
	drillFailed = "Failed"
	drillNone   = "None"
)

var backupJobKind = kind{
	descs: []*prometheus.Desc{backupJobLastSuccess, backupJobLastFailure, backupJobLastSchedule, backupJobNextSchedule,
		backupJobBackups, backupJobMissedRuns, backupJobLastDrill},
	collect: func(ctx context.Context, r client.Reader, _ map[string]bool, emit emitter) error {
		var list v1alpha1.BackupJobList
		if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list BackupJobs from the cache: %w", err)
		}
		for i := range list.Items {
			emitBackupJob(emit, &list.Items[i])
		}
		return nil
	},
}

func emitBackupJob(emit emitter, bj *v1alpha1.BackupJob) {
	s := &bj.Status
	timestamp := func(desc *prometheus.Desc, t *metav1.Time) {
		if t != nil {
			emit.gauge(desc, unixSeconds(*t), bj.Namespace, bj.Name)
		}
	}
	timestamp(backupJobLastSuccess, s.LastSuccessfulTime)
	if s.LastFailure != nil {
		timestamp(backupJobLastFailure, &s.LastFailure.ScheduledTime)
	}
	timestamp(backupJobLastSchedule, s.LastScheduleTime)
	timestamp(backupJobNextSchedule, s.NextScheduleTime)
	emit.gauge(backupJobBackups, float64(s.BackupCount), bj.Namespace, bj.Name)
	emit.gauge(backupJobMissedRuns, float64(s.MissedRuns), bj.Namespace, bj.Name)
	result := drillNone
	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.BackupJobVerifiedCondition); c != nil {
		switch c.Status {
		case metav1.ConditionTrue:
			result = drillPassed
		case metav1.ConditionFalse:
			result = drillFailed
		}
	}
	for _, r := range []string{drillPassed, drillFailed, drillNone} {
		value := 0.0
		if r == result {
			value = 1
		}
		emit.gauge(backupJobLastDrill, value, bj.Namespace, bj.Name, r)
	}
	emit.conditions(BackupJob, bj, s.Conditions)
}
