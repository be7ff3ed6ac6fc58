package instance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	clocktesting "k8s.io/utils/clock/testing"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// The primary reads its archiver's state for the report at most every
// archivingReadInterval, not at every half-second report: within the
// interval the last reading is reported again, after it PostgreSQL is
// asked again (here it has stopped meanwhile, and the report says so).
func TestArchivingReportIsReadAtMostEveryInterval(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-archiving-report")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	m := &Manager{pg: inst, log: testr.New(t), clock: clk, proc: postgrestest.Start(ctx, t, inst)}
	first := m.archivingReport(ctx)
	if first.LastFailure != "" {
		t.Fatalf("the running PostgreSQL's archiver could not be read: %s", first.LastFailure)
	}
	postgrestest.StopProcess(t, m.proc)

	clk.Step(archivingReadInterval - time.Millisecond)
	if again := m.archivingReport(ctx); again.LastFailure != "" {
		t.Errorf("read again within the interval: %s", again.LastFailure)
	}
	clk.Step(time.Millisecond)
	if after := m.archivingReport(ctx); !strings.Contains(after.LastFailure, "cannot be read") {
		t.Errorf("not read again after the interval: LastFailure %q", after.LastFailure)
	}
}
