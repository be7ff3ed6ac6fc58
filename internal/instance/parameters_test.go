package instance

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// A typo in spec.parameters reaches a running primary: it neither restarts
// nor reloads, its configuration stays as it was (for a manager that
// restarts too), and what it reports names the refused parameter. Once
// the spec is right again, the change applies.
func TestRefusedParametersKeepThePrimaryRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-1")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	m := &Manager{pg: inst, log: testr.New(t), proc: postgrestest.Start(ctx, t, inst)}
	pg := &v1alpha1.PostgresCluster{}
	pg.Name = "pg"
	pg.Spec.Instances = 1
	pg.Spec.Parameters = map[string]string{"work_mem": "8MB"}
	m.applySettings(pg)
	if err := m.do(ctx, stepRun, pg, view{}); err != nil {
		t.Fatalf("valid parameters: %v", err)
	}
	waitSetting(ctx, t, inst, "work_mem", "8MB")
	proc := m.proc
	confPath := filepath.Join(inst.DataDir, "operator.conf")
	before, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}

	for _, params := range []map[string]string{
		{"work_mem": "16MB", "shared_bufers": "1GB"},
		{"work_mem": "16MB", "shared_buffers": "lots"},
	} {
		pg.Spec.Parameters = params
		refused := "shared_bufers"
		if _, ok := params["shared_buffers"]; ok {
			refused = "shared_buffers"
		}
		// A manager that restarted knows only the files.
		restarted := *inst
		restarted.Settings = postgres.Settings{}
		for _, m := range []*Manager{m, {pg: &restarted, log: testr.New(t), proc: proc}} {
			m.applySettings(pg)
			if m.proc != proc {
				t.Fatalf("spec.parameters.%s: PostgreSQL was stopped", refused)
			}
			select {
			case <-proc.Exited():
				t.Fatalf("spec.parameters.%s: PostgreSQL exited", refused)
			default:
			}
			if after, err := os.ReadFile(confPath); err != nil || string(after) != string(before) {
				t.Errorf("spec.parameters.%s: operator.conf changed (%v):\n%s", refused, err, after)
			}
			// What the report carries: the step and its error.
			err := m.do(ctx, stepRun, pg, view{})
			if err == nil {
				t.Fatalf("spec.parameters.%s: no error reported", refused)
			}
			if msg := stepRun.String() + ": " + err.Error(); !strings.Contains(msg, "spec.parameters."+refused+": ") ||
				strings.Contains(msg, "spec.parameters.work_mem") {
				t.Errorf("the report does not name spec.parameters.%s alone: %s", refused, msg)
			} else {
				t.Logf("Reported: %s", msg)
			}
		}
	}
	if got := postgrestest.Setting(ctx, t, inst, "work_mem"); got != "8MB" {
		t.Errorf("work_mem is %s, want the 8MB it had", got)
	}

	pg.Spec.Parameters = map[string]string{"work_mem": "16MB"}
	m.applySettings(pg)
	if err := m.do(ctx, stepRun, pg, view{}); err != nil {
		t.Errorf("valid parameters again: %v", err)
	}
	waitSetting(ctx, t, inst, "work_mem", "16MB")
	if m.proc != proc {
		t.Error("a reloadable parameter restarted PostgreSQL")
	}
}

// waitSetting waits until a reload shows in new sessions.
func waitSetting(ctx context.Context, t *testing.T, inst *postgres.Instance, name, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := postgrestest.Setting(ctx, t, inst, name); got != want; got = postgrestest.Setting(ctx, t, inst, name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s, want %s", name, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A spec.parameters with a name the operator owns is refused by the
// operator, and the instance keeps its configuration; a manager that
// restarts meanwhile writes the same configuration when it starts its
// primary again: its synchronous standbys and the parameters it had, not
// an empty configuration.
func TestOwnedParameterKeepsTheConfigurationAcrossARestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-1")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	m := &Manager{pg: inst, log: testr.New(t)}
	pg := &v1alpha1.PostgresCluster{}
	pg.Name = "pg"
	pg.Spec.Instances, pg.Spec.Synchronous = 2, 1
	pg.Spec.Parameters = map[string]string{"work_mem": "8MB"}
	m.applySettings(pg)
	confPath := filepath.Join(inst.DataDir, "operator.conf")
	before, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(before), "pg-2") || !strings.Contains(string(before), "8MB") {
		t.Fatalf("operator.conf lacks the synchronous standby or work_mem:\n%s", before)
	}

	pg.Spec.Parameters = map[string]string{"work_mem": "8MB", "port": "6543"}
	restarted := *inst
	restarted.Settings = postgres.Settings{}
	m = &Manager{pg: &restarted, log: testr.New(t)}
	m.applySettings(pg)
	// What starting the primary writes.
	if _, err := m.pg.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(confPath); err != nil || string(after) != string(before) {
		t.Errorf("operator.conf changed (%v):\n%s\nwas:\n%s", err, after, before)
	}
}

// A user's parameter replaces the default of the same name, whatever its
// case: PostgreSQL's names have none, and postgresql.conf would otherwise
// hold it twice.
func TestUsersParameterReplacesTheDefaultWhateverItsCase(t *testing.T) {
	m := &Manager{}
	pg := &v1alpha1.PostgresCluster{}
	pg.Spec.Storage.Size = resource.MustParse("1Gi")
	pg.Spec.Parameters = map[string]string{"WAL_Receiver_Timeout": "10s", "Max_Slot_WAL_Keep_Size": "1GB", "WAL_Compression": "off"}
	got := m.settingsOf(pg).Parameters
	want := map[string]string{"WAL_Receiver_Timeout": "10s", "wal_sender_timeout": "5s", "Max_Slot_WAL_Keep_Size": "1GB",
		"WAL_Compression": "off", "max_wal_size": "128MB", "min_wal_size": "64MB"}
	if !maps.Equal(got, want) {
		t.Errorf("parameters %v, want %v", got, want)
	}
}

// The WAL a primary keeps for its standbys' slots is bounded by a quarter
// of the volume, unless the user sets it.
func TestMaxSlotWALKeepSizeFollowsTheVolume(t *testing.T) {
	m := &Manager{}
	pg := &v1alpha1.PostgresCluster{}
	for size, want := range map[string]string{"10Gi": "2560MB", "256Mi": "64MB", "16Mi": "16MB"} {
		pg.Spec.Storage.Size = resource.MustParse(size)
		if got := m.settingsOf(pg).Parameters["max_slot_wal_keep_size"]; got != want {
			t.Errorf("storage %s: max_slot_wal_keep_size %s, want %s", size, got, want)
		}
	}
}
