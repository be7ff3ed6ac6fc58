package objectstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RetentionPlan is what a recovery window lets go: the base backups no
// point of the window needs, and the WAL only they need; and the keys of
// the holds that have lapsed.
type RetentionPlan struct {
	Backups []BackupInfo
	WAL     []string
	Holds   []string
}

// PlanRetention is what to delete from an archive of backups (oldest
// first) and WAL files so that any moment from now-window to now can still
// be recovered: the newest backup consistent at or before the window's
// start, every newer one, and the WAL from the oldest kept backup on are
// kept. The newest backup and the WAL after it are never deleted, and
// without any backup nothing is. History files are always kept: they are
// small, and recovery across timelines reads them. A backup that a hold
// holds at now is kept, with every newer one and the WAL from it on,
// however old: a restore is fetching it or replaying the WAL after it.
func PlanRetention(backups []BackupInfo, wal []string, holds []Hold, window time.Duration, now time.Time, segmentOf func(BackupInfo) (uint64, bool)) RetentionPlan {
	var plan RetentionPlan
	held := map[string]bool{}
	for _, h := range holds {
		if h.Until.After(now) {
			held[h.Backup] = true
		} else {
			plan.Holds = append(plan.Holds, h.Key)
		}
	}
	if len(backups) == 0 || window <= 0 {
		return plan
	}
	start := now.Add(-window)
	keepFrom := 0
	for i, b := range backups {
		if !b.EndedAt.After(start) {
			keepFrom = i
		}
	}
	for i, b := range backups[:keepFrom] {
		if held[b.ID] {
			keepFrom = i
			break
		}
	}
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

// ApplyRetention deletes what plan lets go: the backups, then the WAL,
// then the lapsed holds.
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
	for _, key := range plan.Holds {
		if err := c.DeleteHold(ctx, key); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	return nil
}
