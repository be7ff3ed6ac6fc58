package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// TestStandbyStreamsThroughItsSlot: the primary keeps a slot for each
// standby; a standby streams through its own; the slot of a standby that
// is gone is dropped, never one a standby streams through, nor one the
// cluster does not own.
func TestStandbyStreamsThroughItsSlot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newPair(ctx, t, postgres.Synchronous{})
	a, b := p.a, p.b
	a.Settings.StreamThroughSlot, b.Settings.StreamThroughSlot = true, true
	postgrestest.Start(ctx, t, a)
	owned := func(slot string) bool { return strings.HasPrefix(slot, "pg_") }
	created, _, err := a.SyncSlots(ctx, []string{"pg-b", "pg-c"}, owned)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []string{"pg_b", "pg_c"}) {
		t.Fatalf("created %v, want pg_b and pg_c", created)
	}
	execOn(ctx, t, a, "SELECT pg_create_physical_replication_slot('users_own')")
	if created, _, err := a.SyncSlots(ctx, []string{"pg-b", "pg-c"}, owned); err != nil || len(created) != 0 {
		t.Fatalf("a second sync created %v (%v): slots are made once", created, err)
	}

	if err := b.CloneFrom(ctx, source(a, p.bPass)); err != nil {
		t.Fatal(err)
	}
	bProc := postgrestest.Start(ctx, t, b)
	postgrestest.Eventually(t, replicationWait, "pg-b streaming through slot pg_b", func() error {
		slots, err := a.Slots(ctx)
		if err != nil {
			return err
		}
		for _, s := range slots {
			if s.Name == "pg_b" && s.Active && s.WALStatus == "reserved" {
				return nil
			}
		}
		return fmt.Errorf("slots: %+v", slots)
	})

	// pg-b and pg-c gone from the cluster: pg_c is dropped, pg_b not while
	// pg-b streams through it, users_own never.
	_, dropped, err := a.SyncSlots(ctx, nil, owned)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{"pg_c"}) {
		t.Fatalf("dropped %v, want pg_c alone", dropped)
	}
	if err := bProc.Stop(ctx, postgres.StopFast); err != nil {
		t.Fatal(err)
	}
	postgrestest.Eventually(t, replicationWait, "pg_b dropped once pg-b stopped", func() error {
		if _, _, err := a.SyncSlots(ctx, nil, owned); err != nil {
			return err
		}
		slots, err := a.Slots(ctx)
		if err != nil {
			return err
		}
		var names []string
		for _, s := range slots {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, []string{"users_own"}) {
			return fmt.Errorf("slots %v, want users_own alone", names)
		}
		return nil
	})
}
