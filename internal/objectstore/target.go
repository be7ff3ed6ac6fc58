package objectstore

import (
	"fmt"
	"strings"
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
	// Backup, when set, is the ID of the base backup to start from
	// (fromBackup.name), in place of the one the target would choose: a
	// restore drill checks one backup, not the newest.
	Backup string
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
	if target.Backup != "" {
		return namedBaseBackup(backups, target, lsnOf)
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

// namedBaseBackup is the base backup target.Backup names, refused when the
// store does not hold it or when it is consistent only after the target.
func namedBaseBackup(backups []BackupInfo, target Target, lsnOf func(string) uint64) (BackupInfo, error) {
	ids := make([]string, 0, len(backups))
	for _, b := range backups {
		ids = append(ids, b.ID)
		if b.ID != target.Backup {
			continue
		}
		switch {
		case target.Time != nil && b.EndedAt.After(*target.Time):
			return BackupInfo{}, fmt.Errorf("spec.bootstrap.fromBackup.targetTime %s is before base backup %s was consistent (%s): nothing can be restored to it from that backup",
				target.Time.UTC().Format(time.RFC3339), b.ID, b.EndedAt.UTC().Format(time.RFC3339))
		case target.LSN != 0 && lsnOf(b.EndLSN) > target.LSN:
			return BackupInfo{}, fmt.Errorf("spec.bootstrap.fromBackup.targetLSN is before base backup %s was consistent (%s): nothing can be restored to it from that backup", b.ID, b.EndLSN)
		}
		return b, nil
	}
	return BackupInfo{}, fmt.Errorf("spec.bootstrap.fromBackup.name: the object store holds no base backup %s (it holds: %s)", target.Backup, strings.Join(ids, ", "))
}
