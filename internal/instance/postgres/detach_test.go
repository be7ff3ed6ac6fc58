package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// TestDetachedStandbyConfirmsNothing: a synchronous standby detached from
// its primary (reloaded) stops its WAL receiver, so that the primary can
// acknowledge no commit through it and the standby's WAL ends where it
// stopped; configured to follow the primary again, it catches up.
func TestDetachedStandbyConfirmsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p, bProc := startSynchronousPair(ctx, t)
	a, b := p.a, p.b

	change, err := b.DetachStandby()
	if err != nil {
		t.Fatal(err)
	}
	if change != postgres.ReloadNeeded {
		t.Fatalf("detaching a running standby needs %s, want a reload", change)
	}
	if err := bProc.Reload(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Eventually(t, replicationWait, "pg-b gone from pg-a's WAL senders", func() error {
		s, err := a.State(ctx)
		if err != nil {
			return err
		}
		if len(s.Standbys) > 0 {
			return fmt.Errorf("standbys: %+v", s.Standbys)
		}
		return nil
	})
	detached, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Written without waiting for pg-b: it must not arrive there.
	execOn(ctx, t, a, "SET synchronous_commit = local; INSERT INTO rows VALUES (2, 1)")
	time.Sleep(2 * time.Second)
	if n, err := countRows(ctx, b, "id = 2"); err != nil || n != 0 {
		t.Fatalf("a detached standby received a row written after it detached (%d rows, %v)", n, err)
	}
	after, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.ReplayedLSN != detached.ReplayedLSN {
		t.Errorf("the detached standby replayed on, %s to %s", detached.ReplayedLSN, after.ReplayedLSN)
	}

	if _, err := b.ConfigureStandby(source(a, p.bPass)); err != nil {
		t.Fatal(err)
	}
	if err := bProc.Reload(); err != nil {
		t.Fatal(err)
	}
	waitRow(ctx, t, b, 2)
	waitStreaming(ctx, t, a, "pg-b", "quorum")
}
