package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/objectstore"
)

// A restore's hold on its base backup lasts restoreHoldFor from its last
// renewal, which the restoring instance makes every restoreHoldRenewEvery
// while it recovers: a hold whose holder is gone (its cluster deleted
// mid-restore) lapses by itself, one whose holder replays for days does
// not. A renewal or a release that fails is tried again after
// restoreHoldRetry.
const (
	restoreHoldFor        = 24 * time.Hour
	restoreHoldRenewEvery = time.Hour
	restoreHoldRetry      = time.Minute
)

// restoreHoldFile records, on the instance's volume beside its data
// directory (so in no base backup of it), the hold its restore took, until
// the hold is let go: a manager started again renews or lets go that same
// hold, and one of a cluster recovered long ago finds none and asks the
// store nothing.
const restoreHoldFile = "restore-hold.json"

// restoreHoldAction is what the restoring instance does next about its hold.
type restoreHoldAction int

const (
	restoreHoldKeep restoreHoldAction = iota
	restoreHoldRenew
	restoreHoldRelease
)

// nextRestoreHoldAction decides, at now, for an instance that holds a base
// backup (held) and has or has not recovered (its recovery ended: it is a
// ready primary), given when its hold was last renewed and when it last
// tried anything: let the hold go once recovered, renew it while it is
// not, and leave a failed try restoreHoldRetry before the next.
func nextRestoreHoldAction(held, recovered bool, renewedAt, triedAt, now time.Time) restoreHoldAction {
	switch {
	case !held || now.Sub(triedAt) < restoreHoldRetry:
		return restoreHoldKeep
	case recovered:
		return restoreHoldRelease
	case now.Sub(renewedAt) >= restoreHoldRenewEvery:
		return restoreHoldRenew
	}
	return restoreHoldKeep
}

// restoreHoldTender keeps the instance's restore hold. Its fields other
// than running are written only while running is false by the tick, and
// while it is true by the one background call it started.
type restoreHoldTender struct {
	running   atomic.Bool
	loaded    bool
	hold      *objectstore.Hold
	renewedAt time.Time
	triedAt   time.Time
}

// restoreHoldRecord is what restoreHoldFile holds: the hold, and its key,
// which names its object in the store and is not in the object.
type restoreHoldRecord struct {
	Key  string           `json:"key"`
	Hold objectstore.Hold `json:"hold"`
}

func (m *Manager) restoreHoldPath() string {
	return filepath.Join(filepath.Dir(m.opts.PGData), restoreHoldFile)
}

// recordRestoreHold writes h to restoreHoldFile, or removes the file when
// h is nil.
func (m *Manager) recordRestoreHold(h *objectstore.Hold) error {
	if h == nil {
		if err := os.Remove(m.restoreHoldPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the record of the restore's hold: %w", err)
		}
		return nil
	}
	data, err := json.Marshal(restoreHoldRecord{Key: h.Key, Hold: *h})
	if err != nil {
		return fmt.Errorf("encode the restore's hold: %w", err)
	}
	if err := os.WriteFile(m.restoreHoldPath(), data, 0o600); err != nil {
		return fmt.Errorf("record the restore's hold: %w", err)
	}
	return nil
}

// readRestoreHold reads restoreHoldFile: nil when there is none.
func (m *Manager) readRestoreHold() (*objectstore.Hold, error) {
	data, err := os.ReadFile(m.restoreHoldPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the record of the restore's hold: %w", err)
	}
	var r restoreHoldRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read the record of the restore's hold %s: %w", m.restoreHoldPath(), err)
	}
	r.Hold.Key = r.Key
	return &r.Hold, nil
}

// holdRestoreBackup takes a hold on base backup b of store before the
// restore of pg fetches it, so that the source's retention keeps b, and
// the WAL after it, until this cluster has recovered, however far its
// recovery window moves meanwhile; then it checks that b is still there,
// as retention may have deleted it before it saw the hold. Keys that may
// only read the store take no hold: the restore goes on without one.
func (m *Manager) holdRestoreBackup(ctx context.Context, store *objectstore.Client, pg *v1alpha1.PostgresCluster, b objectstore.BackupInfo) error {
	now := m.clock.Now()
	h := objectstore.Hold{Key: string(pg.UID), Backup: b.ID, Holder: pg.Namespace + "/" + pg.Name, Until: now.Add(restoreHoldFor)}
	if err := store.PutHold(ctx, h); err != nil {
		m.log.Info("The restore holds no base backup: the source's retention may delete it while this cluster recovers", "backup", b.ID, "error", err.Error())
		return nil
	}
	if err := m.recordRestoreHold(&h); err != nil {
		return err
	}
	if !m.restoreHold.running.Load() {
		m.restoreHold.loaded, m.restoreHold.hold, m.restoreHold.renewedAt = true, &h, now
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

// tendRestoreHold renews the hold of the instance's restore while it
// recovers and lets it go once it has (nextRestoreHoldAction), in the
// background: a store that does not answer must not hold up a tick.
func (m *Manager) tendRestoreHold(ctx context.Context, s instanceState, now time.Time) {
	t := &m.restoreHold
	if m.opts.Recovery == nil || t.running.Load() {
		return
	}
	if !t.loaded {
		h, err := m.readRestoreHold()
		if err != nil {
			m.log.Info("The restore's hold is neither renewed nor let go: it lapses by itself", "error", err.Error())
		}
		t.loaded, t.hold = true, h
	}
	action := nextRestoreHoldAction(t.hold != nil, s.ready && !s.state.InRecovery, t.renewedAt, t.triedAt, now)
	if action == restoreHoldKeep {
		return
	}
	t.triedAt = now
	t.running.Store(true)
	hold := *t.hold
	go func() {
		defer t.running.Store(false)
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		store, err := objectstore.New(*m.opts.Recovery)
		if err != nil {
			m.log.Info("The restore's hold is neither renewed nor let go", "error", err.Error())
			return
		}
		if action == restoreHoldRelease {
			if err := store.DeleteHold(callCtx, hold.Key); err != nil {
				m.log.Info("The restore's hold on its base backup was not let go: tried again in a minute, else it lapses", "error", err.Error())
				return
			}
			if err := m.recordRestoreHold(nil); err != nil {
				m.log.Info("The restore's hold was let go, its record stays", "error", err.Error())
			}
			t.hold = nil
			m.log.Info("The restore's hold on its base backup let go: the cluster has recovered", "backup", hold.Backup)
			return
		}
		hold.Until = now.Add(restoreHoldFor)
		if err := store.PutHold(callCtx, hold); err != nil {
			m.log.Info("The restore's hold on its base backup was not renewed: tried again in a minute", "until", t.hold.Until, "error", err.Error())
			return
		}
		if err := m.recordRestoreHold(&hold); err != nil {
			m.log.Info("The restore's hold was renewed, its record not", "error", err.Error())
		}
		t.hold, t.renewedAt = &hold, now
		m.log.V(1).Info("The restore's hold on its base backup renewed", "backup", hold.Backup, "until", hold.Until)
	}()
}
