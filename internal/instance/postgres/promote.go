package postgres

import (
	"context"
	"fmt"
	"time"
)

// defaultPromoteWait is how long Promote waits for the promotion when its
// context has no deadline.
const defaultPromoteWait = time.Minute

// Promote makes a running standby a primary (pg_promote, waiting for the
// end of recovery, then a checkpoint so that the control file shows the new
// timeline, which Rewind needs), then writes the configuration of a primary
// and reloads it. Promoting a primary does nothing. The caller holds the
// lease that makes this instance the only primary.
func (i *Instance) Promote(ctx context.Context) error {
	if err := i.validate(); err != nil {
		return err
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("promote %s: %w", i.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var inRecovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		return fmt.Errorf("promote %s: %w", i.Name, err)
	}
	log := i.Log.WithValues("dataDir", i.DataDir)
	if inRecovery {
		wait := defaultPromoteWait
		if deadline, ok := ctx.Deadline(); ok {
			wait = time.Until(deadline)
		}
		seconds := max(int(wait/time.Second), 1)
		log.Info("Promoting to primary")
		var promoted bool
		if err := conn.QueryRow(ctx, "SELECT pg_promote(wait => true, wait_seconds => $1)", seconds).Scan(&promoted); err != nil {
			return fmt.Errorf("promote %s: %w", i.Name, err)
		}
		if !promoted {
			return fmt.Errorf("promote %s: still in recovery after %d s", i.Name, seconds)
		}
		// The control file names the new timeline only after a checkpoint,
		// which a promotion merely requests, spread out; Rewind from this
		// instance waits for it (see checkpointedOnTimeline).
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			return fmt.Errorf("promote %s: checkpoint on the new timeline: %w", i.Name, err)
		}
	}
	// The server removed standby.signal itself; primary_conninfo goes too,
	// so that the files say what the instance is.
	change, err := i.configure(i.DataDir, nil)
	if err != nil {
		return fmt.Errorf("promote %s: %w", i.Name, err)
	}
	if change != NoChange {
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("promote %s: reload the configuration of a primary: %w", i.Name, err)
		}
	}
	if inRecovery {
		log.Info("Promoted to primary", "change", change.String())
	}
	return nil
}
