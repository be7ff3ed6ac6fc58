package instance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// The verify command passes only when the query's first column is true;
// otherwise, and on the database's refusal, it says why in its
// termination message.
func TestVerifyQuery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := postgrestest.NewInstance(t, "pg-verify")
	if err := db.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl", Owner: "app", OwnerPassword: "app-secret", Database: "app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, db)
	conn, err := postgres.Connect(ctx, postgrestest.TCP(db, "app", "app-secret", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE orders (id int); INSERT INTO orders VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	tests := map[string]struct {
		sql, password string
		wantErr       string // "" for a pass
		// never is what the result must not show: the data the query read.
		never string
	}{
		"true":              {sql: "SELECT count(*) > 0 FROM orders", password: "app-secret"},
		"false":             {sql: "SELECT count(*) > 1 FROM orders", password: "app-secret", wantErr: "did not return true: its first column is false"},
		"not a boolean":     {sql: "SELECT count(*) FROM orders", password: "app-secret", wantErr: "its first column is not true: a int64 of SHA-256 "},
		"a table's content": {sql: "SELECT 'card 4111-1111-1111-1111'", password: "app-secret", wantErr: "its first column is not true: a string of SHA-256 ", never: "4111"},
		"no row":            {sql: "SELECT true FROM orders WHERE id = 2", password: "app-secret", wantErr: "it returned no row"},
		"the database says": {sql: "SELECT count(*) > 0 FROM invoices", password: "app-secret", wantErr: `relation "invoices" does not exist`},
		"a refused login":   {sql: "SELECT true", password: "wrong", wantErr: "password authentication failed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "termination-log")
			err := Verify(ctx, VerifyOptions{Host: db.ListenAddress, Port: db.Port, User: "app", Database: "app", Password: tc.password, SQL: tc.sql, TerminationLog: log})
			said, _ := os.ReadFile(log)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("verify: %v, want a pass", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("verify: %v, want an error with %q", err, tc.wantErr)
			case tc.never != "" && (strings.Contains(err.Error(), tc.never) || strings.Contains(string(said), tc.never)):
				t.Fatalf("verify: %v (termination message %q) shows the data the query read", err, said)
			case tc.wantErr != "" && !strings.Contains(string(said), tc.wantErr):
				t.Fatalf("termination message %q, want %q", said, tc.wantErr)
			case name == "false" && !errors.Is(err, errVerifyFalse):
				t.Fatalf("verify: %v, want errVerifyFalse", err)
			}
		})
	}
}
