package postgres

import (
	"context"
	"errors"
	"fmt"
)

// Rewind makes a stopped former primary follow source, the new primary: it
// runs pg_rewind, which copies back from source what changed since their
// histories split (and first finishes crash recovery itself when the data
// directory was not shut down cleanly), then writes the configuration of a
// standby of source, since pg_rewind copied source's own files over it.
// Start it afterwards: its recovery replays up to source's timeline.
//
// source is an ordinary (not replication) connection to a database of the
// new primary: ReplicationUser may make it thanks to the functions InitDB
// grants it. Rewind refuses a source in recovery, and one that has not
// checkpointed since its promotion (ErrSourceNotCheckpointed).
func (i *Instance) Rewind(ctx context.Context, source ConnInfo) error {
	if err := i.validate(); err != nil {
		return err
	}
	follow, err := followConnInfo(source)
	if err != nil {
		return fmt.Errorf("rewind %s: source: %w", i.DataDir, err)
	}
	if !i.Initialized() {
		return fmt.Errorf("rewind %s: not initialized", i.DataDir)
	}
	log := i.Log.WithValues("dataDir", i.DataDir, "source", source.String())
	conn := source
	conn.ApplicationName = ""
	if conn.DBName == "" {
		conn.DBName = "postgres"
	}
	if err := checkpointedOnTimeline(ctx, conn); err != nil {
		return fmt.Errorf("rewind %s from %s: %w", i.DataDir, source, err)
	}
	log.Info("Rewinding the data directory")
	if _, err := i.runTool(ctx, "pg_rewind", passwordEnv(conn),
		"--target-pgdata", i.DataDir,
		"--source-server", conn.String(),
	); err != nil {
		return fmt.Errorf("rewind %s from %s: %w", i.DataDir, source, err)
	}
	if _, err := i.configure(i.DataDir, &follow); err != nil {
		return fmt.Errorf("rewind %s from %s: %w", i.DataDir, source, err)
	}
	log.Info("Rewound the data directory")
	return nil
}

// ErrSourceNotCheckpointed is returned by Rewind when the source has not
// checkpointed since it was promoted; Promote makes that checkpoint, so
// retrying soon succeeds.
var ErrSourceNotCheckpointed = errors.New("the source has not checkpointed on its current timeline yet")

// checkpointedOnTimeline fails unless the source's control file names the
// timeline it writes. Older pg_rewind releases took the source's timeline
// from its control file: before the first checkpoint after a promotion they
// saw the source on the old timeline, found nothing to rewind, and
// succeeded while leaving the target diverged. Current minor releases look
// further, but one query keeps Rewind right with any of them (Patroni
// checks the same before its rewinds).
func checkpointedOnTimeline(ctx context.Context, source ConnInfo) error {
	db, err := Connect(ctx, source)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	var inRecovery bool
	var checkpointTLI int32
	var walFile *string
	if err := db.QueryRow(ctx, `SELECT pg_is_in_recovery(), (SELECT timeline_id FROM pg_control_checkpoint()),
		CASE WHEN NOT pg_is_in_recovery() THEN pg_walfile_name(pg_current_wal_lsn()) END`).Scan(&inRecovery, &checkpointTLI, &walFile); err != nil {
		return fmt.Errorf("read the source's timelines: %w", err)
	}
	if inRecovery || walFile == nil {
		return fmt.Errorf("the source is in recovery: rewind from the primary")
	}
	current, err := timelineOfWALFile(*walFile)
	if err != nil {
		return err
	}
	if uint32(checkpointTLI) < current {
		return fmt.Errorf("%w (checkpoint on timeline %d, writing timeline %d)", ErrSourceNotCheckpointed, checkpointTLI, current)
	}
	return nil
}
