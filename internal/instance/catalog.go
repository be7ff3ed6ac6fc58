package instance

import (
	"context"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
	"example.com/platform-operator/internal/pgspec"
)

// catalogInterval is how often the primary reads the store's base backups
// (for the status) and applies spec.backup.retention.
const catalogInterval = time.Minute

// catalog is what the primary last read of the store's base backups.
type catalog struct {
	first, last *metav1.Time
	count       int32
}

// catalogKeeper runs the catalog pass in the background, one at a time:
// listing a store, or deleting from it, must not hold up a tick.
type catalogKeeper struct {
	running atomic.Bool
	lastRun time.Time
	latest  atomic.Pointer[catalog]
}

// maybeCatalog starts a catalog pass when the primary archives and the
// last one is catalogInterval old.
func (m *Manager) maybeCatalog(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState, now time.Time) {
	if pg.Spec.Backup == nil || m.opts.Archive == nil || !s.ready || s.state.InRecovery || now.Sub(m.catalog.lastRun) < catalogInterval {
		return
	}
	if !m.catalog.running.CompareAndSwap(false, true) {
		return
	}
	m.catalog.lastRun = now
	segSize := m.walSegmentSize(ctx)
	backup := pg.Spec.Backup.DeepCopy()
	go func() {
		defer m.catalog.running.Store(false)
		passCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if err := m.catalogPass(passCtx, backup, segSize); err != nil {
			m.log.Info("The object store's catalog or retention pass failed; tried again in a minute", "error", err.Error())
		}
	}()
}

// catalogPass reads the store's base backups and applies the retention
// window.
func (m *Manager) catalogPass(ctx context.Context, backup *v1alpha1.PostgresBackupSpec, segSize uint64) error {
	store, err := objectstore.New(*m.opts.Archive)
	if err != nil {
		return err
	}
	backups, err := store.ListBaseBackups(ctx)
	if err != nil {
		return err
	}
	window, err := pgspec.RetentionWindow(backup)
	if err != nil {
		return err
	}
	if window > 0 && len(backups) > 0 && segSize > 0 {
		wal, err := store.ArchivedWAL(ctx)
		if err != nil {
			return err
		}
		holds, err := store.ListHolds(ctx)
		if err != nil {
			return err
		}
		plan := objectstore.PlanRetention(backups, wal, holds, window, m.clock.Now(), func(b objectstore.BackupInfo) (uint64, bool) {
			return objectstore.StartSegment(b, func(s string) (uint64, error) {
				lsn, err := postgres.ParseLSN(s)
				return uint64(lsn), err
			}, segSize)
		})
		if len(plan.Backups) > 0 || len(plan.WAL) > 0 || len(plan.Holds) > 0 {
			if err := store.ApplyRetention(ctx, plan); err != nil {
				return err
			}
			m.log.Info("Retention: deleted what the recovery window no longer needs", "backups", len(plan.Backups), "walFiles", len(plan.WAL),
				"lapsedHolds", len(plan.Holds), "window", backup.Retention)
			backups = backups[len(plan.Backups):]
		}
	}
	c := &catalog{count: int32(len(backups))}
	if len(backups) > 0 {
		first, last := metav1.NewTime(backups[0].EndedAt), metav1.NewTime(backups[len(backups)-1].EndedAt)
		c.first, c.last = &first, &last
	}
	m.catalog.latest.Store(c)
	m.poke()
	return nil
}

// walSegmentSize is the instance's WAL segment size in bytes; 0 when it
// cannot be read.
func (m *Manager) walSegmentSize(ctx context.Context) uint64 {
	conn, err := m.pg.Connect(ctx, "postgres")
	if err != nil {
		return 0
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var size int64
	if err := conn.QueryRow(ctx, "SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'").Scan(&size); err != nil || size <= 0 {
		return 0
	}
	return uint64(size)
}
