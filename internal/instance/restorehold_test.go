package instance

import (
	"path/filepath"
	"testing"
	"time"

	"example.com/platform-operator/internal/objectstore"
)

// A restoring instance renews its hold while it recovers, lets it go once
// it has, asks the store nothing when it holds nothing (a cluster that
// recovered long ago), and waits before trying again what failed.
func TestNextRestoreHoldAction(t *testing.T) {
	now := time.Date(2026, 12, 8, 12, 0, 0, 0, time.UTC)
	never := time.Time{}
	for _, tc := range []struct {
		name               string
		held, recovered    bool
		renewedAt, triedAt time.Time
		want               restoreHoldAction
	}{
		{"nothing held, recovered", false, true, never, never, restoreHoldKeep},
		{"nothing held, recovering", false, false, never, never, restoreHoldKeep},
		{"held, just taken, recovering", true, false, now.Add(-time.Minute), never, restoreHoldKeep},
		{"held, recovering for an hour since the last renewal", true, false, now.Add(-restoreHoldRenewEvery), now.Add(-restoreHoldRenewEvery), restoreHoldRenew},
		{"held, recovering, a manager started again (no renewal this run)", true, false, never, never, restoreHoldRenew},
		{"held, recovered", true, true, now.Add(-time.Minute), never, restoreHoldRelease},
		{"held, recovered, a release failed a moment ago", true, true, now.Add(-time.Hour), now.Add(-restoreHoldRetry + time.Second), restoreHoldKeep},
		{"held, recovered, a release failed a minute ago", true, true, now.Add(-time.Hour), now.Add(-restoreHoldRetry), restoreHoldRelease},
		{"held, recovering, a renewal failed a moment ago", true, false, now.Add(-2 * time.Hour), now.Add(-time.Second), restoreHoldKeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRestoreHoldAction(tc.held, tc.recovered, tc.renewedAt, tc.triedAt, now); got != tc.want {
				t.Errorf("action %d, want %d", got, tc.want)
			}
		})
	}
}

// The record of a restore's hold is kept beside the data directory, not
// in it, and is gone once the hold is let go.
func TestRestoreHoldRecord(t *testing.T) {
	volume := t.TempDir()
	m := &Manager{opts: Options{PGData: filepath.Join(volume, "pgdata")}}
	if h, err := m.readRestoreHold(); err != nil || h != nil {
		t.Fatalf("no record: read %v, %v; want nil, nil", h, err)
	}
	until := time.Date(2026, 12, 9, 12, 0, 0, 0, time.UTC)
	taken := objectstore.Hold{Key: "uid", Backup: "b1", Holder: "shop/restored", Until: until}
	if err := m.recordRestoreHold(&taken); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(m.restoreHoldPath()) != volume {
		t.Errorf("the record %s is not beside the data directory", m.restoreHoldPath())
	}
	h, err := m.readRestoreHold()
	if err != nil || h == nil || *h != taken {
		t.Fatalf("read %+v, %v; want %+v", h, err, taken)
	}
	if err := m.recordRestoreHold(nil); err != nil {
		t.Fatal(err)
	}
	if h, err := m.readRestoreHold(); err != nil || h != nil {
		t.Errorf("after the release: read %v, %v; want nil, nil", h, err)
	}
	if err := m.recordRestoreHold(nil); err != nil {
		t.Errorf("removing a record that is gone: %v", err)
	}
}
