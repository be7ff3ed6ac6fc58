package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Cluster states as pg_controldata prints them ("Database cluster state").
const (
	ClusterStateStartingUp         = "starting up"
	ClusterStateShutDown           = "shut down"
	ClusterStateShutDownInRecovery = "shut down in recovery"
	ClusterStateShuttingDown       = "shutting down"
	ClusterStateInCrashRecovery    = "in crash recovery"
	ClusterStateInArchiveRecovery  = "in archive recovery"
	ClusterStateInProduction       = "in production"
)

// ControlData is what pg_controldata reads from a data directory's control
// file: readable whether or not postgres runs, which is when the instance
// manager needs it (before starting, after stopping).
type ControlData struct {
	// ClusterState is one of the ClusterState* constants.
	ClusterState     string
	SystemIdentifier uint64
	// TimelineID is the timeline of the latest checkpoint.
	TimelineID uint32
	// CheckpointLSN and RedoLSN are the latest checkpoint's location and
	// the location its replay starts from.
	CheckpointLSN LSN
	RedoLSN       LSN
	// MinRecoveryEndLSN is how far a standby must replay before it is
	// consistent (0 on a primary), on MinRecoveryEndTimeline.
	MinRecoveryEndLSN      LSN
	MinRecoveryEndTimeline uint32
	// Fields holds every line of pg_controldata, by its label.
	Fields map[string]string
}

// CleanShutdown tells whether postgres last stopped cleanly, with a
// shutdown checkpoint: as a primary ("shut down") or as a standby ("shut
// down in recovery"). Anything else means a crash, an immediate shutdown or
// a server still running, and the next start replays WAL first.
func (c ControlData) CleanShutdown() bool {
	return c.ClusterState == ClusterStateShutDown || c.ClusterState == ClusterStateShutDownInRecovery
}

// InRecoveryState tells whether the control file says the instance last ran
// (or stopped) as a standby. A data directory out of recovery and without
// standby.signal (Instance.StandbyConfigured) is a former primary, which
// the instance manager must not start unless it is the primary still: it
// would make a second one.
func (c ControlData) InRecoveryState() bool {
	return c.ClusterState == ClusterStateShutDownInRecovery || c.ClusterState == ClusterStateInArchiveRecovery
}

// ControlData runs pg_controldata on the data directory.
func (i *Instance) ControlData(ctx context.Context) (ControlData, error) {
	if err := i.validate(); err != nil {
		return ControlData{}, err
	}
	out, err := i.runTool(ctx, "pg_controldata", nil, "--pgdata", i.DataDir)
	if err != nil {
		return ControlData{}, fmt.Errorf("read the control data of %s: %w", i.DataDir, err)
	}
	cd, err := ParseControlData(out)
	if err != nil {
		return ControlData{}, fmt.Errorf("read the control data of %s: %w", i.DataDir, err)
	}
	return cd, nil
}

// ParseControlData parses the output of pg_controldata run in the C
// locale.
func ParseControlData(out string) (ControlData, error) {
	cd := ControlData{Fields: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		// Labels contain colons of their own only before the last one
		// ("Latest checkpoint's oldestCommitTsXid:0" has no space).
		label, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		// "pg_control last modified: Wed Dec  2 14:21:46 2026" holds
		// colons in its value: cut at the first colon.
		cd.Fields[strings.TrimSpace(label)] = strings.TrimSpace(value)
	}
	var errs []string
	need := func(label string) string {
		v, ok := cd.Fields[label]
		if !ok {
			errs = append(errs, fmt.Sprintf("no %q", label))
		}
		return v
	}
	lsn := func(label string) LSN {
		v := need(label)
		if v == "" {
			return 0
		}
		l, err := ParseLSN(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", label, err))
		}
		return l
	}
	uint := func(label string, bits int) uint64 {
		v := need(label)
		if v == "" {
			return 0
		}
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", label, err))
		}
		return n
	}
	cd.ClusterState = need("Database cluster state")
	cd.SystemIdentifier = uint("Database system identifier", 64)
	cd.TimelineID = uint32(uint("Latest checkpoint's TimeLineID", 32))
	cd.CheckpointLSN = lsn("Latest checkpoint location")
	cd.RedoLSN = lsn("Latest checkpoint's REDO location")
	cd.MinRecoveryEndLSN = lsn("Minimum recovery ending location")
	cd.MinRecoveryEndTimeline = uint32(uint("Min recovery ending loc's timeline", 32))
	if len(errs) > 0 {
		return ControlData{}, fmt.Errorf("unexpected pg_controldata output: %s", strings.Join(errs, "; "))
	}
	return cd, nil
}
