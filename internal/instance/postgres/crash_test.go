package postgres_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// TestCrashRecovery kills postgres (SIGKILL, all its processes, as a crash
// of its container would) while a writer commits, and checks that the
// control data shows no clean shutdown and that the restart's crash
// recovery keeps every committed row.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst, p, conn := startConnected(ctx, t, "pg-crash")
	if _, err := conn.Exec(ctx, "CREATE TABLE rows (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// Each row in its own transaction: every acknowledged commit counts.
	const committed = 300
	for id := range committed {
		if _, err := conn.Exec(ctx, "INSERT INTO rows VALUES ($1)", id); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction still open at the crash must vanish.
	if _, err := conn.Exec(ctx, "BEGIN; INSERT INTO rows VALUES (-1)"); err != nil {
		t.Fatal(err)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	cd, err := inst.ControlData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cd.CleanShutdown() || cd.ClusterState != postgres.ClusterStateInProduction {
		t.Errorf("control data after a crash: state %q, clean %v", cd.ClusterState, cd.CleanShutdown())
	}

	postgrestest.Start(ctx, t, inst)
	conn, err = inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var count, low, high int
	if err := conn.QueryRow(ctx, "SELECT count(*), min(id), max(id) FROM rows").Scan(&count, &low, &high); err != nil {
		t.Fatal(err)
	}
	if count != committed || low != 0 || high != committed-1 {
		t.Errorf("after crash recovery: %d rows from %d to %d, want %d from 0 to %d", count, low, high, committed, committed-1)
	}
}

// A crash ends every process of the server, as the end of its container
// would: a backend busy with a query, which would only notice its
// postmaster's death at its next wait, must not outlive Kill, or it keeps
// writing to the data directory and the next start refuses to run beside
// its shared memory.
func TestKillEndsBusyBackends(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst, p, conn := startConnected(ctx, t, "pg-kill-busy")
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	// A query that computes for minutes without waiting on anything.
	queryDone := make(chan struct{})
	go func() {
		defer close(queryDone)
		_, _ = conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 100000000000)")
	}()
	waitBackendActive(ctx, t, inst, backend)

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if postgres.Running(backend) {
		_ = syscall.Kill(backend, syscall.SIGKILL)
		t.Fatalf("backend %d still runs after Kill", backend)
	}
	<-queryDone
	conn.Close(context.WithoutCancel(ctx))
	postgrestest.Start(ctx, t, inst)
}

// startConnected initializes and starts a primary named name, with a
// connection to it.
func startConnected(ctx context.Context, t *testing.T, name string) (*postgres.Instance, *postgres.Process, *pgx.Conn) {
	t.Helper()
	inst := postgrestest.NewInstance(t, name)
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	p := postgrestest.Start(ctx, t, inst)
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	return inst, p, conn
}

// waitBackendActive waits until the backend pid runs a query, seen from
// another connection.
func waitBackendActive(ctx context.Context, t *testing.T, inst *postgres.Instance, pid int) {
	t.Helper()
	watcher, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(context.WithoutCancel(ctx))
	for range 100 {
		var active bool
		if err := watcher.QueryRow(ctx, "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", pid).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("backend %d never ran its query", pid)
}
