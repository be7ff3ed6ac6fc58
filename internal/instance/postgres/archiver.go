package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ArchiverStats is where the instance's WAL archiving stands
// (pg_stat_archiver), and how much WAL waits for it.
type ArchiverStats struct {
	LastArchivedWAL string
	LastArchivedAt  time.Time
	LastFailedWAL   string
	LastFailedAt    time.Time
	// Pending counts the WAL files ready to archive and not archived yet
	// (pg_wal/archive_status/*.ready): they stay on the volume until the
	// store has them.
	Pending int
}

// ArchiverStats reads them from the running instance and its data
// directory.
func (i *Instance) ArchiverStats(ctx context.Context) (ArchiverStats, error) {
	var s ArchiverStats
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return s, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var archivedAt, failedAt *time.Time
	if err := conn.QueryRow(ctx, `SELECT coalesce(last_archived_wal, ''), last_archived_time,
		coalesce(last_failed_wal, ''), last_failed_time FROM pg_stat_archiver`).Scan(
		&s.LastArchivedWAL, &archivedAt, &s.LastFailedWAL, &failedAt); err != nil {
		return s, fmt.Errorf("read pg_stat_archiver: %w", err)
	}
	if archivedAt != nil {
		s.LastArchivedAt = *archivedAt
	}
	if failedAt != nil {
		s.LastFailedAt = *failedAt
	}
	entries, err := os.ReadDir(filepath.Join(i.DataDir, "pg_wal", "archive_status"))
	if err != nil {
		return s, fmt.Errorf("read the WAL waiting to be archived: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".ready") {
			s.Pending++
		}
	}
	return s, nil
}
