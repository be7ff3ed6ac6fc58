package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// A base backup streamed from a standby, as the backup role, holds every
// row committed before it started; a server started on it as a primary
// opens with them and takes writes. A second attempt keeps the copy it
// finds; a refused login leaves nothing behind.
func TestBaseBackupFromAStandbyRestores(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newPair(ctx, t, postgres.Synchronous{})
	a, b := p.a, p.b
	postgrestest.Start(ctx, t, a)
	const backupPassword = "backup's secret"
	for range 2 { // made, then found with its password: nothing to do
		if err := a.EnsureReplicationRole(ctx, postgres.BackupUser, backupPassword); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SetPassword(ctx, "nobody", "x"); err == nil || !strings.Contains(err.Error(), "no such role") {
		t.Fatalf("SetPassword of a missing role: %v, want no such role", err)
	}
	execOn(ctx, t, a, "CREATE TABLE rows (id int PRIMARY KEY, timeline int)")
	execOn(ctx, t, a, "INSERT INTO rows SELECT g, 1 FROM generate_series(1, 100) g")
	if err := b.CloneFrom(ctx, source(a, p.bPass)); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, b)
	waitStreaming(ctx, t, a, "pg-b", "async")
	waitRow(ctx, t, b, 100)

	restored := postgrestest.NewInstance(t, "pg-restored")
	backup := postgres.BaseBackup{
		BinDir: b.BinDir, Dir: restored.DataDir, Label: "nightly", Credential: b.Credential, Log: b.Log,
		Source: postgrestest.TCP(b, postgres.BackupUser, "wrong", "postgres"),
	}
	if _, err := backup.Take(ctx); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("base backup with a wrong password: %v, want the server's refusal", err)
	}
	for _, dir := range []string{restored.DataDir, restored.DataDir + ".partial"} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%s after a refused backup: %v, want none", dir, err)
		}
	}

	backup.Source.Password = backupPassword
	label, err := backup.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !label.FromStandby || label.Timeline != 1 || label.StartLSN == 0 || label.EndLSN < label.StartLSN || label.Label != "nightly" {
		t.Fatalf("backup label %+v, want from a standby, timeline 1, a start LSN, an end after it, label nightly", label)
	}
	execOn(ctx, t, a, "INSERT INTO rows VALUES (101, 1)") // after the backup: not in it
	again, err := backup.Take(ctx)
	if err != nil || again != label {
		t.Fatalf("second attempt: %+v, %v; want the first copy's label %+v", again, err, label)
	}

	if _, err := restored.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, restored)
	if n, err := countRows(ctx, restored, "id <= 100"); err != nil || n != 100 {
		t.Fatalf("restored rows 1..100: %d, %v; want 100", n, err)
	}
	if n, err := countRows(ctx, restored, "id = 101"); err != nil || n != 0 {
		t.Fatalf("restored row written after the backup: %d, %v; want 0", n, err)
	}
	execOn(ctx, t, restored, "INSERT INTO rows VALUES (101, 2)")
	expectRanAsPrimary(ctx, t, restored, true)
}
