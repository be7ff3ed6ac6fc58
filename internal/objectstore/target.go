package objectstore

import (
	"fmt"
	"time"
)

// Target is where a point-in-time recovery stops: at most one of Time,
// LSN and Name; none recovers to the end of the archive.
type Target struct {
	Time *time.Time
	// LSN is a WAL position, its numeric value given by the caller that
	// parsed it (0: none).
	LSN uint64
	// Name is a restore point made with pg_create_restore_point.
	Name string
}

// ChooseBaseBackup is the base backup (of backups, oldest first) that a
// recovery to target starts from: the newest one that is consistent before
// the target, so that the least WAL is replayed. A restore point's
// position is not known before recovery reaches it, so a Name starts from
// the oldest backup, from which every later point can be reached. lsnOf
// parses a backup's LSN.
func ChooseBaseBackup(backups []BackupInfo, target Target, lsnOf func(string) uint64) (BackupInfo, error) {
	if len(backups) == 0 {
		return BackupInfo{}, fmt.Errorf("the object store holds no base backup: take one (a BackupJob with target objectStore) before restoring")
	}
	switch {
	case target.Name != "":
		return backups[0], nil
	case target.Time != nil:
		for i := len(backups) - 1; i >= 0; i-- {
			if !backups[i].EndedAt.After(*target.Time) {
				return backups[i], nil
			}
		}
		return BackupInfo{}, fmt.Errorf("targetTime %s is before the oldest base backup was consistent (%s): nothing can be restored to it",
			target.Time.UTC().Format(time.RFC3339), backups[0].EndedAt.UTC().Format(time.RFC3339))
	case target.LSN != 0:
		for i := len(backups) - 1; i >= 0; i-- {
			if lsnOf(backups[i].EndLSN) <= target.LSN {
				return backups[i], nil
			}
		}
		return BackupInfo{}, fmt.Errorf("targetLSN is before the oldest base backup was consistent (%s): nothing can be restored to it", backups[0].EndLSN)
	}
	return backups[len(backups)-1], nil
}
