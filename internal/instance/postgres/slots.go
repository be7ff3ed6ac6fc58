package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// SlotName is the physical replication slot a standby streams through,
// from its name (an instance's, which synchronous_standby_names also
// lists): a slot's name allows only lower-case letters, digits and
// underscores.
func SlotName(standby string) string {
	return strings.ReplaceAll(standby, "-", "_")
}

// Slot is one of the primary's physical replication slots.
type Slot struct {
	Name   string
	Active bool
	// WALStatus is PostgreSQL's wal_status: reserved, extended, unreserved,
	// or lost once max_slot_wal_keep_size removed WAL it held.
	WALStatus string
}

// Slots lists the physical replication slots of the instance.
func (i *Instance) Slots(ctx context.Context) ([]Slot, error) {
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SELECT slot_name, active, coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_type = 'physical' ORDER BY slot_name")
	if err != nil {
		return nil, fmt.Errorf("list the replication slots of %s: %w", i.Name, err)
	}
	defer rows.Close()
	var out []Slot
	for rows.Next() {
		var s Slot
		if err := rows.Scan(&s.Name, &s.Active, &s.WALStatus); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// SyncSlots gives a primary a physical replication slot for each standby of
// want (by name), made with its WAL reserved at once, so that the primary
// keeps the WAL a standby has not received, even while it is down (up to
// max_slot_wal_keep_size). It drops the slots that owned says are the
// cluster's and that want no longer lists, unless a standby still streams
// through one. Slots it does not own (a user's) it leaves alone.
func (i *Instance) SyncSlots(ctx context.Context, want []string, owned func(slot string) bool) (created, dropped []string, err error) {
	have, err := i.Slots(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	wanted := make([]string, len(want))
	for n, standby := range want {
		wanted[n] = SlotName(standby)
	}
	for _, name := range wanted {
		if slices.ContainsFunc(have, func(s Slot) bool { return s.Name == name }) {
			continue
		}
		if _, err := conn.Exec(ctx, "SELECT pg_create_physical_replication_slot($1, true)", name); err != nil {
			return created, dropped, fmt.Errorf("create the replication slot %s on %s: %w", name, i.Name, err)
		}
		created = append(created, name)
	}
	for _, s := range have {
		if slices.Contains(wanted, s.Name) || !owned(s.Name) || s.Active {
			continue
		}
		if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", s.Name); err != nil {
			return created, dropped, fmt.Errorf("drop the replication slot %s on %s: %w", s.Name, i.Name, err)
		}
		dropped = append(dropped, s.Name)
	}
	return created, dropped, nil
}
