package instance

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// A standby's pod that comes back while it is the election's target (the
// fault run's delete-primary-and-standby, seed 20261208) starts PostgreSQL
// with the configuration of this pod, not with the one its former pod left
// in the data directory: there, the socket directory and the TLS files
// were the former pod's, and PostgreSQL could not start (its certificate
// file gone) or could not be reached to be promoted.
func TestStandbyStartedAsTargetTakesThisPodsConfiguration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-target")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	// The former pod left standby data, configured with its own socket
	// directory.
	if _, err := inst.DetachStandby(); err != nil {
		t.Fatal(err)
	}
	podSocketDir, err := os.MkdirTemp("", "pgsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(podSocketDir) })
	inst.SocketDir = podSocketDir

	m := &Manager{pg: inst, log: testr.New(t)}
	t.Cleanup(func() { m.stopFast(context.Background()) })
	v := view{fresh: true, target: "pg-target", current: "pg-gone", epoch: 2}
	if s, why := next("pg-target", local{initialized: true, holdsLease: true}, v, time.Now()); s != stepStartStandby {
		t.Fatalf("next step %s (%s), want %s", s, why, stepStartStandby)
	}
	if err := m.doStep(ctx, stepStartStandby, nil, v); err != nil {
		t.Fatal(err)
	}
	var inRecovery bool
	postgrestest.Eventually(t, 30*time.Second, "PostgreSQL answers on this pod's socket directory "+podSocketDir, func() error {
		connCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := postgres.Connect(connCtx, postgres.ConnInfo{Host: podSocketDir, Port: inst.Port, User: "postgres", DBName: "postgres"})
		if err != nil {
			return err
		}
		defer conn.Close(connCtx)
		return conn.QueryRow(connCtx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
	})
	if !inRecovery {
		t.Error("PostgreSQL runs as a primary; want the standby that will be promoted")
	}
}
