package instance

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
)

// slotsEvery is how often a primary checks its replication slots when the
// cluster's membership did not change.
const slotsEvery = 30 * time.Second

// syncSlots gives the primary a replication slot for each of its standbys
// (every other instance of spec.instances) and drops those of instances no
// longer in the cluster: it runs when the membership changed, and every
// slotsEvery.
func (m *Manager) syncSlots(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState, now time.Time) {
	if !s.ready || s.state.InRecovery || !m.lease.held(now) {
		m.slotsFor = ""
		return
	}
	want := standbyNames(pg, m.opts.PodName)
	key := strings.Join(want, ",")
	if key == m.slotsFor && now.Sub(m.slotsAt) < slotsEvery {
		return
	}
	created, dropped, err := m.pg.SyncSlots(ctx, want, ownedSlot(pg.Name))
	if err != nil {
		m.log.Error(err, "Replication slots not in sync")
		return
	}
	if len(created) > 0 || len(dropped) > 0 {
		m.log.Info("Replication slots", "created", created, "dropped", dropped)
	}
	m.slotsFor, m.slotsAt = key, now
}

// ownedSlot tells whether a slot is one the cluster's primary keeps for an
// instance of the cluster (SlotName of CLUSTER-N), and not a user's.
func ownedSlot(cluster string) func(slot string) bool {
	prefix := postgres.SlotName(cluster) + "_"
	return func(slot string) bool {
		n, ok := strings.CutPrefix(slot, prefix)
		if !ok {
			return false
		}
		_, err := strconv.Atoi(n)
		return err == nil
	}
}

// maxSlotWALKeepSize bounds the WAL the primary keeps for standbys that do
// not receive it (down, or far behind): a quarter of the volume, so that a
// lost standby cannot fill the primary's disk. A standby that falls behind
// further must be cloned again.
func maxSlotWALKeepSize(pg *v1alpha1.PostgresCluster) string {
	mb := pg.Spec.Storage.Size.Value() / 4 / (1 << 20)
	return fmt.Sprintf("%dMB", max(mb, 16))
}
