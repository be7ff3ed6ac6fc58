package pgspec

// BaseBackupResult is the termination message of a base backup's
// container, which the operator records on the backup: the tool writes
// it, the BackupJob controller reads it.
type BaseBackupResult struct {
	StartLSN    string `json:"startLSN"`
	EndLSN      string `json:"endLSN"`
	Timeline    int64  `json:"timeline"`
	FromStandby bool   `json:"fromStandby"`
	// BackupID names a backup put in an object store, in its location;
	// empty for a backup into a claim.
	BackupID string `json:"backupID,omitempty"`
	// Size is the bytes of an object-store backup's tar stream, before
	// compression: a claim has a capacity to show, the store nothing the
	// operator reads.
	Size int64 `json:"size,omitempty"`
	// PointInTime is a moment (RFC 3339) just after an object-store
	// backup ended that a recovery can target, with a commit after it
	// that the run made; empty when that commit failed.
	PointInTime string `json:"pointInTime,omitempty"`
}
