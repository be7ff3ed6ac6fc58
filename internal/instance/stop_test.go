package instance

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// A fast shutdown that a step began goes on when the manager's context
// ends (a SIGTERM while the primary steps down): PostgreSQL stops cleanly,
// its last WAL sent to the standbys, instead of being killed halfway.
func TestStopFastOutlivesTheManagersContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-stop")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	m := &Manager{pg: inst, log: testr.New(t), proc: postgrestest.Start(ctx, t, inst)}
	ended, end := context.WithCancel(ctx)
	end()
	m.stopFast(ended)
	data, err := inst.ControlData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !data.CleanShutdown() {
		t.Errorf("PostgreSQL was not shut down cleanly: its control data says %q", data.ClusterState)
	}
}
