package instance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// The mark after a backup is a commit (a transaction ID is used up), made
// as the backup role, and it does not wait for a synchronous standby: a
// cluster short of its standbys must not hold the backup's run.
func TestCommitMarkCommitsWithoutStandbys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := postgrestest.NewInstance(t, "pg-mark")
	if err := db.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, db)
	if err := db.EnsureReplicationRole(ctx, postgres.BackupUser, "backup-secret"); err != nil {
		t.Fatal(err)
	}
	super, err := db.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(context.WithoutCancel(ctx))
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = 'nobody'", "SELECT pg_reload_conf()"} {
		if _, err := super.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	postgrestest.Eventually(t, 10*time.Second, "synchronous_standby_names set", func() error {
		if got := postgrestest.Setting(ctx, t, db, "synchronous_standby_names"); got != "nobody" {
			return fmt.Errorf("synchronous_standby_names is %q", got)
		}
		return nil
	})
	var before int64
	if err := super.QueryRow(ctx, "SELECT txid_snapshot_xmax(txid_current_snapshot())").Scan(&before); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	if err := commitMark(ctx, postgrestest.TCP(db, postgres.BackupUser, "backup-secret", "postgres")); err != nil {
		t.Fatalf("the mark: %v", err)
	}
	if took := time.Since(started); took > markTimeout/2 {
		t.Errorf("the mark took %s: it waited for the standby", took)
	}
	var after int64
	if err := super.QueryRow(ctx, "SELECT txid_snapshot_xmax(txid_current_snapshot())").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("no transaction committed: next transaction ID %d before the mark, %d after", before, after)
	}
}
