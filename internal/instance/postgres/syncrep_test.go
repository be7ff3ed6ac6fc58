package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// commitBlockedFor is how long a commit must stay blocked, while no
// synchronous standby runs, for the test to call it waiting.
const commitBlockedFor = 2 * time.Second

// startSynchronousPair starts pg-a as a primary with ANY 1 ("pg-b") and
// pg-b as its standby, streaming, with row 1 committed on both.
func startSynchronousPair(ctx context.Context, t *testing.T) (*pair, *postgres.Process) {
	t.Helper()
	p := newPair(ctx, t, postgres.Synchronous{Number: 1, Standbys: []string{"pg-b"}})
	postgrestest.Start(ctx, t, p.a)
	if err := p.b.CloneFrom(ctx, source(p.a, p.bPass)); err != nil {
		t.Fatal(err)
	}
	bProc := postgrestest.Start(ctx, t, p.b)
	// ANY n is quorum commit.
	waitStreaming(ctx, t, p.a, "pg-b", "quorum")
	execOn(ctx, t, p.a, "CREATE TABLE rows (id int PRIMARY KEY, timeline int)")
	execOn(ctx, t, p.a, "INSERT INTO rows VALUES (1, 1)")
	// Synchronous: visible on the standby as soon as the commit returns
	// (remote_apply is not asked for, so only eventually).
	waitRow(ctx, t, p.b, 1)
	return p, bProc
}

// TestSynchronousReplication runs ANY 1 ("pg-b"): a commit on the primary
// waits while the standby is stopped (the backend waits on SyncRep) and
// completes once the standby is back.
func TestSynchronousReplication(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p, bProc := startSynchronousPair(ctx, t)
	a, b := p.a, p.b

	if err := bProc.Stop(ctx, postgres.StopFast); err != nil {
		t.Fatal(err)
	}
	writer, err := a.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(context.WithoutCancel(ctx))
	// statement_timeout does not bound this wait: PostgreSQL turns it off
	// before the commit. The wait is bounded here by the test's context,
	// and shown by the backend's wait event.
	writeCtx, stopWriter := context.WithCancel(ctx)
	var commitErr error
	commitDone := make(chan struct{})
	go func() {
		defer close(commitDone)
		_, commitErr = writer.Exec(writeCtx, "INSERT INTO rows VALUES (2, 1)")
	}()
	// Whatever happens, the writer is done with its connection before the
	// connection closes.
	defer func() {
		stopWriter()
		<-commitDone
	}()
	select {
	case <-commitDone:
		t.Fatalf("the commit returned (%v) with no synchronous standby running", commitErr)
	case <-time.After(commitBlockedFor):
	}
	postgrestest.Eventually(t, 10*time.Second, "the commit waiting on SyncRep", func() error {
		conn, err := a.Connect(ctx, "postgres")
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var waiting int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE 'INSERT INTO rows%'").Scan(&waiting); err != nil {
			return err
		}
		if waiting != 1 {
			return fmt.Errorf("%d backends waiting on SyncRep", waiting)
		}
		return nil
	})

	postgrestest.Start(ctx, t, b)
	select {
	case <-commitDone:
		if commitErr != nil {
			t.Fatalf("the commit after the standby came back: %v", commitErr)
		}
	case <-time.After(replicationWait):
		t.Fatalf("the commit still waits %s after the standby came back", replicationWait)
	}
	waitStreaming(ctx, t, a, "pg-b", "quorum")
	waitRow(ctx, t, b, 2)
}
