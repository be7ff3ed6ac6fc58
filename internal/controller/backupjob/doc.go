// Package backupjob is the controller of the BackupJob kind
// (example.com/v1alpha1).
//
// Its pure foundation, which the reconciler builds on and which needs no API
// server:
//
//   - schedule.go, schedule_dst.go: spec.schedule and spec.timeZone parsed
//     into a Schedule, whose Next follows the wall clock across daylight
//     saving changes;
//   - due.go: which scheduled time to run now, how many were missed and when
//     the next one is, from the schedule state in status and the time now,
//     computed like the built-in CronJob controller;
//   - runname.go: the deterministic names of a run's objects;
//   - retention.go: which backups the retention policy keeps, and why.
//
// None of them reads a clock: the reconciler passes the time from its
// injected clock.Clock.
package backupjob
