package instance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
	"example.com/platform-operator/internal/pgspec"
)

// The command of a BackupJob's base backup Job, run on the host against a
// real PostgreSQL: it makes the data directory, says where the backup
// starts in its termination message, and a server started on the copy
// holds the rows. Without the password it refuses to start, naming where
// the password comes from.
func TestBaseBackupCommandRestores(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	source := postgrestest.NewInstance(t, "pg-source")
	if err := source.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl", Owner: "app", OwnerPassword: "app", Database: "app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := source.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, source)
	if err := source.EnsureReplicationRole(ctx, postgres.BackupUser, "backup-secret"); err != nil {
		t.Fatal(err)
	}
	conn, err := postgres.Connect(ctx, postgrestest.TCP(source, "app", "app", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders SELECT generate_series(1, 50)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	claim := t.TempDir() // the run's claim, mounted at /backup in the Job
	env := map[string]string{pgspec.EnvPassword: "backup-secret", "PG_BIN_DIR": source.BinDir}
	args := []string{"basebackup", "--host", source.ListenAddress, "--port", strconv.Itoa(source.Port), "--label", "nightly-1",
		"--dir", filepath.Join(claim, "pgdata"), "--termination-log", filepath.Join(claim, "termination-log")}

	var stderr bytes.Buffer
	if code := Main(args, func(k string) string { return "" }, &stderr); code != 2 || !strings.Contains(stderr.String(), pgspec.EnvPassword) {
		t.Fatalf("without a password: exit %d, %q; want 2 naming %s", code, stderr.String(), pgspec.EnvPassword)
	}
	stderr.Reset()
	if code := Main(args, func(k string) string { return env[k] }, &stderr); code != 0 {
		t.Fatalf("instance basebackup: exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(claim, "termination-log"))
	if err != nil {
		t.Fatal(err)
	}
	var result pgspec.BaseBackupResult
	if err := json.Unmarshal(data, &result); err != nil {
		t.Fatalf("termination message %q: %v", data, err)
	}
	start, startErr := postgres.ParseLSN(result.StartLSN)
	end, endErr := postgres.ParseLSN(result.EndLSN)
	if result.Timeline != 1 || result.FromStandby || startErr != nil || endErr != nil || end <= start {
		t.Fatalf("termination message %+v, want timeline 1, from the primary, a start LSN and a later end", result)
	}

	// The Job runs as the postgres user; here the copy is handed to the
	// user the test's servers run as.
	restored := postgrestest.NewInstance(t, "pg-restored")
	restored.DataDir = filepath.Join(claim, "pgdata")
	if cred := restored.Credential; cred != nil {
		if err := filepath.Walk(claim, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(cred.Uid), int(cred.Gid))
		}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(claim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := restored.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, restored)
	conn, err = restored.Connect(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 50 {
		t.Fatalf("orders in the restored copy: %d, %v; want 50", n, err)
	}
}
