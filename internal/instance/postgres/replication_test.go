package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// replicationWait bounds each wait for replication to catch up.
const replicationWait = 30 * time.Second

// pair is a primary and the instance that becomes its standby, with a
// password file each that reaches the other as ReplicationUser.
type pair struct {
	a, b         *postgres.Instance
	aPass, bPass string
	replPassword string
}

// newPair initializes a, both with the given synchronous replication, and
// makes password files for both; neither is started.
func newPair(ctx context.Context, t *testing.T, sync postgres.Synchronous) *pair {
	t.Helper()
	p := &pair{a: postgrestest.NewInstance(t, "pg-a"), b: postgrestest.NewInstance(t, "pg-b"), replPassword: "repl's secret"}
	p.a.Settings.Synchronous, p.b.Settings.Synchronous = sync, sync
	if err := p.a.InitDB(ctx, postgres.InitOptions{ReplicationPassword: p.replPassword}); err != nil {
		t.Fatal(err)
	}
	entries := []postgres.ConnInfo{
		postgrestest.TCP(p.a, postgres.ReplicationUser, p.replPassword, ""),
		postgrestest.TCP(p.b, postgres.ReplicationUser, p.replPassword, ""),
	}
	p.aPass = postgrestest.PassFile(t, p.a, entries...)
	p.bPass = postgrestest.PassFile(t, p.b, entries...)
	return p
}

// source is how follower reaches leader: as ReplicationUser, with its own
// password file.
func source(leader *postgres.Instance, passFile string) postgres.ConnInfo {
	return postgres.ConnInfo{Host: leader.ListenAddress, Port: leader.Port, User: postgres.ReplicationUser, DBName: "postgres", PassFile: passFile}
}

// waitStreaming waits until primary shows standby streaming, in the given
// sync state.
func waitStreaming(ctx context.Context, t *testing.T, primary *postgres.Instance, standby, syncState string) {
	t.Helper()
	postgrestest.Eventually(t, replicationWait, fmt.Sprintf("%s streaming from %s (%s)", standby, primary.Name, syncState), func() error {
		s, err := primary.State(ctx)
		if err != nil {
			return err
		}
		for _, st := range s.Standbys {
			if st.ApplicationName == standby && st.State == "streaming" && st.SyncState == syncState {
				return nil
			}
		}
		return fmt.Errorf("standbys: %+v", s.Standbys)
	})
}

// waitRow waits until the row id is visible on inst.
func waitRow(ctx context.Context, t *testing.T, inst *postgres.Instance, id int) {
	t.Helper()
	postgrestest.Eventually(t, replicationWait, fmt.Sprintf("row %d on %s", id, inst.Name), func() error {
		n, err := countRows(ctx, inst, "id = $1", id)
		if err != nil {
			return err
		}
		if n != 1 {
			return errors.New("not there yet")
		}
		return nil
	})
}

func countRows(ctx context.Context, inst *postgres.Instance, where string, args ...any) (int, error) {
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM rows WHERE "+where, args...).Scan(&n)
	return n, err
}

func execOn(ctx context.Context, t *testing.T, inst *postgres.Instance, sql string, args ...any) {
	t.Helper()
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s on %s: %v", sql, inst.Name, err)
	}
}

// TestStreamingPromotionRewind runs the life of a failover: a primary and a
// standby cloned from it, streaming; the standby promoted (a new timeline)
// while the old primary, still running, writes a row the new one never
// gets, then crashes; the old primary rewound onto the new timeline and
// following the new primary, with the diverged row gone.
func TestStreamingPromotionRewind(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newPair(ctx, t, postgres.Synchronous{})
	a, b := p.a, p.b
	aProc := postgrestest.Start(ctx, t, a)
	execOn(ctx, t, a, "CREATE TABLE rows (id int PRIMARY KEY, timeline int)")

	if err := b.CloneFrom(ctx, source(a, p.bPass)); err != nil {
		t.Fatal(err)
	}
	if standby, err := b.StandbyConfigured(); err != nil || !standby {
		t.Fatalf("clone: standby.signal present %v (%v)", standby, err)
	}
	postgrestest.Start(ctx, t, b)
	waitStreaming(ctx, t, a, "pg-b", "async")
	execOn(ctx, t, a, "INSERT INTO rows VALUES (1, 1)")
	waitRow(ctx, t, b, 1)

	aState, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bState, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bState.InRecovery || bState.TimelineID != 1 || bState.ReceivedLSN == 0 || bState.ReplayedLSN == 0 ||
		bState.SystemIdentifier != aState.SystemIdentifier {
		t.Errorf("standby's state: %+v (primary's %+v)", bState, aState)
	}

	expectRanAsPrimary(ctx, t, b, false)

	// Promotion, while the old primary still runs: the split brain that
	// fencing prevents in production, made here to get a divergence.
	if err := b.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	bState, err = b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bState.InRecovery || bState.TimelineID != 2 {
		t.Errorf("after promotion: in recovery %v, timeline %d, want a primary on timeline 2", bState.InRecovery, bState.TimelineID)
	}
	if standby, err := b.StandbyConfigured(); err != nil || standby {
		t.Errorf("after promotion: standby.signal present %v (%v)", standby, err)
	}
	// Promote wrote the configuration of a primary already.
	if change, err := b.ConfigurePrimary(); err != nil || change != postgres.NoChange {
		t.Errorf("ConfigurePrimary after Promote: %s, %v; want no change", change, err)
	}
	execOn(ctx, t, b, "INSERT INTO rows VALUES (2, 2)")
	execOn(ctx, t, a, "INSERT INTO rows VALUES (100, 1)") // diverges, on timeline 1
	if err := aProc.Kill(); err != nil {
		t.Fatal(err)
	}
	cd, err := a.ControlData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cd.CleanShutdown() || cd.InRecoveryState() {
		t.Errorf("old primary after its crash: state %q", cd.ClusterState)
	}
	// Both ran as primaries: only a rewind lets the old one start.
	expectRanAsPrimary(ctx, t, a, true)
	expectRanAsPrimary(ctx, t, b, true)

	// The crashed old primary: pg_rewind finishes its crash recovery, then
	// rewinds it.
	if err := a.Rewind(ctx, source(b, p.aPass)); err != nil {
		t.Fatal(err)
	}
	if standby, err := a.StandbyConfigured(); err != nil || !standby {
		t.Fatalf("after rewind: standby.signal present %v (%v)", standby, err)
	}
	expectRanAsPrimary(ctx, t, a, false)
	aProc = postgrestest.Start(ctx, t, a)
	waitStreaming(ctx, t, b, "pg-a", "async")
	execOn(ctx, t, b, "INSERT INTO rows VALUES (3, 2)")
	waitRow(ctx, t, a, 3)

	// primary_conninfo is reloadable in PostgreSQL 15: another password
	// file takes a reload, and the standby streams again with it.
	otherPass := filepath.Join(filepath.Dir(p.aPass), "pgpass-2")
	if err := a.WritePassFile(otherPass, postgrestest.TCP(b, postgres.ReplicationUser, p.replPassword, "")); err != nil {
		t.Fatal(err)
	}
	change, err := a.ConfigureStandby(source(b, otherPass))
	if err != nil || change != postgres.ReloadNeeded {
		t.Fatalf("ConfigureStandby with another password file: %s, %v; want a reload", change, err)
	}
	if err := aProc.Reload(); err != nil {
		t.Fatal(err)
	}
	execOn(ctx, t, b, "INSERT INTO rows VALUES (4, 2)")
	waitRow(ctx, t, a, 4)
	postgrestest.Eventually(t, replicationWait, "the WAL receiver using the new password file", func() error {
		conn, err := a.Connect(ctx, "postgres")
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var conninfo string
		if err := conn.QueryRow(ctx, "SELECT coalesce((SELECT conninfo FROM pg_stat_wal_receiver WHERE status = 'streaming'), '')").Scan(&conninfo); err != nil {
			return err
		}
		if !strings.Contains(conninfo, otherPass) {
			return fmt.Errorf("WAL receiver's conninfo %q", conninfo)
		}
		return nil
	})

	aState, err = a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !aState.InRecovery || aState.TimelineID != 2 {
		t.Errorf("rewound old primary: in recovery %v, timeline %d, want a standby on timeline 2", aState.InRecovery, aState.TimelineID)
	}
	// No divergence: the same rows on both, without the one the old primary
	// wrote after the split.
	for _, inst := range []*postgres.Instance{a, b} {
		conn, err := inst.Connect(ctx, "postgres")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, "SELECT id FROM rows ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids) != "[1 2 3 4]" {
			t.Errorf("rows on %s: %v, want [1 2 3 4]", inst.Name, ids)
		}
	}
}

func expectRanAsPrimary(ctx context.Context, t *testing.T, inst *postgres.Instance, want bool) {
	t.Helper()
	got, err := inst.RanAsPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s ran as a primary: %v, want %v", inst.Name, got, want)
	}
}
