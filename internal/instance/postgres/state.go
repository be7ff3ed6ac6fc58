package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// State is what a running instance reports of itself.
type State struct {
	// InRecovery is true on a standby.
	InRecovery       bool
	SystemIdentifier uint64
	// TimelineID is the timeline the instance writes (a primary) or
	// receives (a standby).
	TimelineID uint32
	// CurrentLSN is where a primary writes WAL; 0 on a standby.
	CurrentLSN LSN
	// ReceivedLSN and ReplayedLSN are how far a standby has received (and
	// flushed) and replayed WAL; 0 on a primary.
	ReceivedLSN LSN
	ReplayedLSN LSN
	// Standbys are the WAL senders' peers: standbys, clones in progress.
	Standbys []Standby
}

// Standby is a connection streaming WAL from the instance
// (pg_stat_replication).
type Standby struct {
	ApplicationName string
	// State is the WAL sender's state: startup, catchup, streaming, backup
	// or stopping.
	State string
	// SyncState is async, potential, sync or quorum.
	SyncState string
	FlushLSN  LSN
	ReplayLSN LSN
}

// State queries the running instance over its socket.
func (i *Instance) State(ctx context.Context) (State, error) {
	if err := i.validate(); err != nil {
		return State{}, err
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return State{}, fmt.Errorf("read the state of %s: %w", i.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var s State
	var sysID int64
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery(), system_identifier FROM pg_control_system()").Scan(&s.InRecovery, &sysID); err != nil {
		return State{}, fmt.Errorf("read the state of %s: %w", i.Name, err)
	}
	// system_identifier is an unsigned 64-bit number that SQL shows as a
	// bigint.
	s.SystemIdentifier = uint64(sysID)

	if !s.InRecovery {
		// The WAL file name starts with the timeline that WAL is written
		// on, which is the new one as soon as a promotion ends (the
		// control file's checkpoint timeline lags until the next
		// checkpoint).
		var current, walFile string
		if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text, pg_walfile_name(pg_current_wal_lsn())").Scan(&current, &walFile); err != nil {
			return State{}, fmt.Errorf("read the WAL position of %s: %w", i.Name, err)
		}
		if s.CurrentLSN, err = ParseLSN(current); err != nil {
			return State{}, fmt.Errorf("read the WAL position of %s: %w", i.Name, err)
		}
		if s.TimelineID, err = timelineOfWALFile(walFile); err != nil {
			return State{}, fmt.Errorf("read the timeline of %s: %w", i.Name, err)
		}
	} else {
		// pg_walfile_name refuses to run in recovery: the timeline is the
		// WAL receiver's, or, when none runs, the latest of the last
		// restartpoint's and the consistency point's.
		var received, replayed *string
		var receivedTLI *int32
		var checkpointTLI, minRecoveryTLI int32
		if err := conn.QueryRow(ctx, `SELECT pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text,
			(SELECT received_tli FROM pg_stat_wal_receiver),
			(SELECT timeline_id FROM pg_control_checkpoint()),
			(SELECT min_recovery_end_timeline FROM pg_control_recovery())`).Scan(&received, &replayed, &receivedTLI, &checkpointTLI, &minRecoveryTLI); err != nil {
			return State{}, fmt.Errorf("read the WAL positions of %s: %w", i.Name, err)
		}
		if s.ReceivedLSN, err = parseNullLSN(received); err != nil {
			return State{}, fmt.Errorf("read the WAL positions of %s: %w", i.Name, err)
		}
		if s.ReplayedLSN, err = parseNullLSN(replayed); err != nil {
			return State{}, fmt.Errorf("read the WAL positions of %s: %w", i.Name, err)
		}
		switch {
		case receivedTLI != nil && *receivedTLI > 0:
			s.TimelineID = uint32(*receivedTLI)
		default:
			// The control file names the timeline of the last restartpoint,
			// which lags one the standby followed by streaming; the WAL
			// file it replays from tells the timeline it is on.
			s.TimelineID = uint32(max(checkpointTLI, minRecoveryTLI))
			if replaying, err := i.replayTimeline(ctx, conn, s.ReplayedLSN); err == nil {
				s.TimelineID = max(s.TimelineID, replaying)
			}
		}
	}

	rows, err := conn.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(state, ''), coalesce(sync_state, ''),
		flush_lsn::text, replay_lsn::text FROM pg_stat_replication ORDER BY application_name, pid`)
	if err != nil {
		return State{}, fmt.Errorf("read the standbys of %s: %w", i.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st Standby
		var flush, replay *string
		if err := rows.Scan(&st.ApplicationName, &st.State, &st.SyncState, &flush, &replay); err != nil {
			return State{}, fmt.Errorf("read the standbys of %s: %w", i.Name, err)
		}
		if st.FlushLSN, err = parseNullLSN(flush); err != nil {
			return State{}, fmt.Errorf("read the standbys of %s: %w", i.Name, err)
		}
		if st.ReplayLSN, err = parseNullLSN(replay); err != nil {
			return State{}, fmt.Errorf("read the standbys of %s: %w", i.Name, err)
		}
		s.Standbys = append(s.Standbys, st)
	}
	if err := rows.Err(); err != nil {
		return State{}, fmt.Errorf("read the standbys of %s: %w", i.Name, err)
	}
	return s, nil
}

// timelineOfWALFile reads the timeline from a WAL file name: its first 8
// hexadecimal digits.
func timelineOfWALFile(name string) (uint32, error) {
	if len(name) != 24 {
		return 0, fmt.Errorf("unexpected WAL file name %q", name)
	}
	tli, err := strconv.ParseUint(name[:8], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("unexpected WAL file name %q: %w", name, err)
	}
	return uint32(tli), nil
}

// replayTimeline is the timeline of the WAL a standby replays at lsn: the
// latest timeline of the files in pg_wal holding that segment (a standby
// that followed a new timeline holds the segment of the fork on both).
func (i *Instance) replayTimeline(ctx context.Context, conn *pgx.Conn, lsn LSN) (uint32, error) {
	var segmentSize int64
	if err := conn.QueryRow(ctx, "SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'").Scan(&segmentSize); err != nil {
		return 0, fmt.Errorf("read the WAL segment size of %s: %w", i.Name, err)
	}
	if segmentSize <= 0 || lsn == 0 {
		return 0, fmt.Errorf("no WAL position or segment size on %s", i.Name)
	}
	segment := uint64(lsn) / uint64(segmentSize)
	perLog := uint64(0x100000000) / uint64(segmentSize)
	suffix := fmt.Sprintf("%08X%08X", segment/perLog, segment%perLog)
	var latest *string
	if err := conn.QueryRow(ctx, "SELECT max(substr(name, 1, 8)) FROM pg_ls_waldir() WHERE length(name) = 24 AND substr(name, 9) = $1", suffix).Scan(&latest); err != nil {
		return 0, fmt.Errorf("list the WAL files of %s: %w", i.Name, err)
	}
	if latest == nil {
		return 0, fmt.Errorf("no WAL file of %s holds %s", i.Name, lsn)
	}
	return timelineOfWALFile(*latest + suffix)
}
