package instance

import (
	"context"
	"fmt"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/objectstore"
)

// restoreHoldFor is how long a restore's hold on its base backup lasts if
// nothing lets it go first (its cluster deleted mid-restore, its manager
// gone): longer than a restore fetches and replays.
const restoreHoldFor = 24 * time.Hour

// holdRestoreBackup takes a hold on base backup b of store before the
// restore of pg fetches it, so that the source's retention keeps b, and
// the WAL after it, until this cluster has recovered, however far its
// recovery window moves meanwhile; then it checks that b is still there,
// as retention may have deleted it before it saw the hold. Keys that may
// only read the store take no hold: the restore goes on without one.
func (m *Manager) holdRestoreBackup(ctx context.Context, store *objectstore.Client, pg *v1alpha1.PostgresCluster, b objectstore.BackupInfo) error {
	h := objectstore.Hold{Key: string(pg.UID), Backup: b.ID, Holder: pg.Namespace + "/" + pg.Name, Until: m.clock.Now().Add(restoreHoldFor)}
	if err := store.PutHold(ctx, h); err != nil {
		m.log.Info("The restore holds no base backup: the source's retention may delete it while this cluster recovers", "backup", b.ID, "error", err.Error())
		return nil
	}
	m.log.Info("Holding the base backup against the source's retention while this cluster recovers", "backup", b.ID, "until", h.Until)
	backups, err := store.ListBaseBackups(ctx)
	if err != nil {
		return err
	}
	for _, found := range backups {
		if found.ID == b.ID {
			return nil
		}
	}
	return fmt.Errorf("base backup %s was deleted by its source's retention before this restore held it: choosing again", b.ID)
}

// maybeReleaseRestoreHold lets the hold of pg's restore go, once its
// recovery has ended: on the primary of a cluster restored from an object
// store, once per run of the manager, in the background (a store that
// does not answer must not hold up a tick), and at best (a hold that stays
// lapses).
func (m *Manager) maybeReleaseRestoreHold(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState) {
	b := pg.Spec.Bootstrap
	if m.restoreHoldReleased || m.opts.Recovery == nil || b == nil || b.FromBackup == nil || b.FromBackup.ObjectStore == nil ||
		!s.ready || s.state.InRecovery {
		return
	}
	m.restoreHoldReleased = true
	key := string(pg.UID)
	go func() {
		releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		store, err := objectstore.New(*m.opts.Recovery)
		if err == nil {
			err = store.DeleteHold(releaseCtx, key)
		}
		if err != nil {
			m.log.Info("The restore's hold on its base backup was not let go: it lapses by itself", "error", err.Error())
			return
		}
		m.log.V(1).Info("The restore's hold on its base backup let go")
	}()
}
