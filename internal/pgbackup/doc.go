// Package pgbackup holds the PostgreSQL backup methods' knowledge that needs
// no controller: which instance a run copies or fences, why a run waits,
// and what a base backup's tool Job reports. It imports the API types,
// internal/pgspec, the PostgreSQL library (for WAL positions) and the kit's
// Cause, never the BackupJob controller, which calls it (see
// docs/design.md, "Backup methods").
//
// The methods themselves (the cold snapshot of a fenced replica, the base
// backups into a claim or the object store, the SQL restore drill) are
// still in internal/controller/backupjob behind its backupMethod interface.
package pgbackup
