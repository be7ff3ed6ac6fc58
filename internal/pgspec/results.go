package pgspec

// BaseBackupResult is the termination message of a base backup's
// container, which the operator records on the backup: the tool writes
// it, the BackupJob controller reads it.
type BaseBackupResult struct {
	StartLSN    string `json:"startLSN"`
	EndLSN      string `json:"endLSN"`
	Timeline    int64  `json:"timeline"`
	FromStandby bool   `json:"fromStandby"`
}
