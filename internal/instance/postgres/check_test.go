package postgres_test

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

// TestRefusedParametersKeepTheInstanceRunning gives a running primary
// parameters PostgreSQL 15 would not start with: ConfigurePrimary refuses
// them, naming each and saying why, and writes nothing, so that the server
// runs on and would start again with its configuration. Valid changes,
// with an extension's parameter, still apply, by a reload or a restart.
func TestRefusedParametersKeepTheInstanceRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-params")
	inst.Settings.Parameters = map[string]string{"work_mem": "8MB"}
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	p := postgrestest.Start(ctx, t, inst)
	// apply does what the instance manager does with a change.
	apply := func(change postgres.Change) {
		t.Helper()
		switch change {
		case postgres.ReloadNeeded:
			if err := p.Reload(); err != nil {
				t.Fatal(err)
			}
		case postgres.RestartNeeded:
			if err := p.Stop(ctx, postgres.StopFast); err != nil {
				t.Fatal(err)
			}
			var err error
			if p, err = inst.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { postgrestest.StopProcess(t, p) })
			if err := p.WaitReady(ctx); err != nil {
				t.Fatalf("PostgreSQL does not start again: %v", err)
			}
		}
	}
	confPath := filepath.Join(inst.DataDir, "operator.conf")
	before, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.PID()

	refused := map[string]struct {
		params map[string]string
		name   string
		reason string
	}{
		"a misspelt name": {
			params: map[string]string{"work_mem": "16MB", "shared_bufers": "1GB"},
			name:   "shared_bufers", reason: `unrecognized configuration parameter "shared_bufers"`,
		},
		"a memory size that is not one": {
			params: map[string]string{"work_mem": "16MB", "shared_buffers": "lots"},
			name:   "shared_buffers", reason: `invalid value for parameter "shared_buffers": "lots"`,
		},
		"a number out of range": {
			params: map[string]string{"work_mem": "16MB", "max_connections": "-5"},
			name:   "max_connections", reason: `-5 is outside the valid range for parameter "max_connections"`,
		},
		"a value not among the choices": {
			params: map[string]string{"work_mem": "16MB", "wal_compression": "foo"},
			name:   "wal_compression", reason: "Available values: pglz, lz4, zstd, on, off.",
		},
	}
	for name, tc := range refused {
		inst.Settings.Parameters = tc.params
		change, err := inst.ConfigurePrimary()
		var e *postgres.RefusedParametersError
		if !errors.As(err, &e) || len(e.Refused) != 1 || e.Refused[0].Name != tc.name || !strings.Contains(e.Refused[0].Reason, tc.reason) {
			t.Errorf("%s: got %v, want %s refused: %s", name, err, tc.name, tc.reason)
		} else if msg := err.Error(); !strings.Contains(msg, tc.name+": ") || strings.Contains(msg, "line 1") {
			t.Errorf("%s: the message does not name the parameter alone: %s", name, msg)
		}
		if change != postgres.NoChange {
			t.Errorf("%s: change %s, want none", name, change)
		}
		apply(change)
		if after, err := os.ReadFile(confPath); err != nil || string(after) != string(before) {
			t.Errorf("%s: operator.conf changed (%v):\n%s", name, err, after)
		}
	}
	select {
	case <-p.Exited():
		t.Fatal("PostgreSQL stopped")
	default:
	}
	if p.PID() != pid || postgrestest.Setting(ctx, t, inst, "work_mem") != "8MB" {
		t.Errorf("PostgreSQL restarted or took a refused set: pid %d (was %d), work_mem %s", p.PID(), pid, postgrestest.Setting(ctx, t, inst, "work_mem"))
	}
	// The configuration on disk is the one a restart would read.
	apply(postgres.RestartNeeded)
	if got := postgrestest.Setting(ctx, t, inst, "work_mem"); got != "8MB" {
		t.Errorf("after a restart: work_mem %s, want 8MB", got)
	}

	inst.Settings.Parameters = map[string]string{"work_mem": "16MB", "pg_stat_statements.max": "100"}
	change, err := inst.ConfigurePrimary()
	if err != nil || change != postgres.RestartNeeded {
		// An extension's parameter, unknown to the server's contexts,
		// needs a restart.
		t.Fatalf("valid parameters: change %s, %v", change, err)
	}
	apply(change)
	inst.Settings.Parameters = map[string]string{"work_mem": "32MB", "pg_stat_statements.max": "100"}
	if change, err = inst.ConfigurePrimary(); err != nil || change != postgres.ReloadNeeded {
		t.Fatalf("a valid user-context parameter: change %s, %v", change, err)
	}
	apply(change)
	deadline := time.Now().Add(10 * time.Second)
	for postgrestest.Setting(ctx, t, inst, "work_mem") != "32MB" {
		if time.Now().After(deadline) {
			t.Fatalf("work_mem is %s after the reload, want 32MB", postgrestest.Setting(ctx, t, inst, "work_mem"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := postgrestest.Setting(ctx, t, inst, "pg_stat_statements.max"); got != "100" {
		t.Errorf("pg_stat_statements.max is %q, want 100", got)
	}
	written, err := inst.WrittenParameters()
	if err != nil || len(written) != 2 || written["work_mem"] != "32MB" || written["pg_stat_statements.max"] != "100" {
		t.Errorf("written parameters: %v, %v", written, err)
	}
}
