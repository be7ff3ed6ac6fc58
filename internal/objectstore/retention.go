package objectstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RetentionPlan is what a recovery window lets go: the base backups no
// point of the window needs, and the WAL only they need.
type RetentionPlan struct {
	Backups []BackupInfo
	WAL     []string
}

// PlanRetention is what to delete from an archive of backups (oldest
// first) and WAL files so that any moment from now-window to now can still
// be recovered: the newest backup consistent at or before the window's
// start, every newer one, and the WAL from the oldest kept backup on are
// kept. The newest backup and the WAL after it are never deleted, and
// without any backup nothing is. History files are always kept: they are
// small, and recovery across timelines reads them.
func PlanRetention(backups []BackupInfo, wal []string, window time.Duration, now time.Time, segmentOf func(BackupInfo) (uint64, bool)) RetentionPlan {
	if len(backups) == 0 || window <= 0 {
		return RetentionPlan{}
	}
	start := now.Add(-window)
	keepFrom := 0
	for i, b := range backups {
		if !b.EndedAt.After(start) {
			keepFrom = i
		}
	}
	var plan RetentionPlan
	plan.Backups = append(plan.Backups, backups[:keepFrom]...)
	oldest, ok := segmentOf(backups[keepFrom])
	if !ok {
		// Where the oldest kept backup starts is not known: its WAL stays.
		return plan
	}
	for _, name := range wal {
		if seg, ok := segmentNumber(name); ok && seg < oldest {
			plan.WAL = append(plan.WAL, name)
		}
	}
	return plan
}

// segmentNumber is the position of a WAL file (a segment, partial or
// backup history) in the WAL stream, whatever its timeline: log * 2^32 /
// segment size + segment, compared as the file name gives them; false
// for a timeline history file.
func segmentNumber(name string) (uint64, bool) {
	if len(name) < 24 || strings.HasSuffix(name, ".history") {
		return 0, false
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return log<<32 | seg, true
}

// StartSegment is the position (as segmentNumber counts) of the segment
// where backup b's WAL starts, for a segment size, from its start LSN as
// lsnOf parses it.
func StartSegment(b BackupInfo, lsnOf func(string) (uint64, error), segSize uint64) (uint64, bool) {
	lsn, err := lsnOf(b.StartLSN)
	if err != nil || segSize == 0 {
		return 0, false
	}
	perLog := uint64(0x100000000) / segSize
	seg := lsn / segSize
	return (seg/perLog)<<32 | seg%perLog, true
}

// ApplyRetention deletes what plan lets go: the backups, then the WAL.
func (c *Client) ApplyRetention(ctx context.Context, plan RetentionPlan) error {
	for _, b := range plan.Backups {
		if err := c.DeleteBaseBackup(ctx, b); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	objects := make([]string, 0, 2*len(plan.WAL))
	for _, name := range plan.WAL {
		object, err := walObject(name)
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		objects = append(objects, object, object+gzSuffix)
	}
	if err := c.remove(ctx, objects); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	return nil
}
