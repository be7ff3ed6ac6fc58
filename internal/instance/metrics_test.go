package instance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// scrape gathers c once and returns each series as NAME{l="v",...} → value.
func scrape(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = value(f.GetType(), m)
		}
	}
	return out
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	if t == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func localConnect(inst *postgres.Instance) func(ctx context.Context) (*pgx.Conn, error) {
	return func(ctx context.Context) (*pgx.Conn, error) {
		info := inst.LocalConnInfo("postgres")
		info.ApplicationName = "instance-manager-metrics"
		return postgres.Connect(ctx, info)
	}
}

// The collector against real PostgreSQL: a primary with a synchronous
// standby, the standby, and an instance that does not answer. Every query
// runs with pg_monitor's rights alone (collect_errors 0), and each figure
// is PostgreSQL's own.
func TestCollectorReadsPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := postgrestest.NewInstance(t, "pg-ma"), postgrestest.NewInstance(t, "pg-mb")
	sync := postgres.Synchronous{Number: 1, Standbys: []string{"pg-mb"}}
	a.Settings.Synchronous, b.Settings.Synchronous = sync, sync
	const replPassword = "repl"
	if err := a.InitDB(ctx, postgres.InitOptions{ReplicationPassword: replPassword, Owner: "app", OwnerPassword: "app-secret", Database: "app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, a)
	pass := postgrestest.PassFile(t, b, postgrestest.TCP(a, postgres.ReplicationUser, replPassword, ""))
	if err := b.CloneFrom(ctx, postgres.ConnInfo{Host: a.ListenAddress, Port: a.Port, User: postgres.ReplicationUser, DBName: "postgres", PassFile: pass}); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, b)
	log := testr.New(t)
	primary := newPGCollector(ctx, localConnect(a), log)
	var got map[string]float64
	postgrestest.Eventually(t, 30*time.Second, "pg-mb streaming, synchronous", func() error {
		got = scrape(t, primary)
		if got[`platform_postgres_standby_sync_state{standby="pg-mb",state="quorum"}`] != 1 {
			return fmt.Errorf("standbys: %v", filter(got, "standby"))
		}
		return nil
	})
	for series, check := range map[string]func(float64) bool{
		"platform_postgres_up":                                                eq(1),
		"platform_postgres_collect_errors":                                    eq(0),
		`platform_postgres_role{role="primary"}`:                              eq(1),
		`platform_postgres_role{role="replica"}`:                              eq(0),
		"platform_postgres_timeline_id":                                       eq(1),
		`platform_postgres_standby_lag_bytes{standby="pg-mb"}`:                atLeast(0),
		`platform_postgres_standby_lag_seconds{standby="pg-mb"}`:              atLeast(0),
		`platform_postgres_standby_sync_state{standby="pg-mb",state="async"}`: eq(0),
		"platform_postgres_wal_files":                                         atLeast(1),
		"platform_postgres_wal_bytes":                                         atLeast(16 << 20),
		"platform_postgres_archiver_archived_total":                           eq(0),
		"platform_postgres_archiver_failed_total":                             eq(0),
		"platform_postgres_archiver_ready_wal_files":                          eq(0),
		// The scrape's own session is the active one.
		`platform_postgres_connections{state="active"}`:              atLeast(1),
		`platform_postgres_connections{state="idle"}`:                atLeast(0),
		"platform_postgres_max_connections":                          atLeast(10),
		"platform_postgres_oldest_xid_age":                           atLeast(1),
		`platform_postgres_database_size_bytes{database="app"}`:      atLeast(1 << 20),
		`platform_postgres_database_size_bytes{database="postgres"}`: atLeast(1 << 20),
		`platform_postgres_database_deadlocks_total{database="app"}`: eq(0),
		"platform_postgres_checkpoints_timed_total":                  atLeast(0),
		"platform_postgres_checkpoints_requested_total":              atLeast(1),
	} {
		v, ok := got[series]
		if !ok || !check(v) {
			t.Errorf("primary: %s = %v (present %v)", series, v, ok)
		}
	}
	for _, absent := range []string{"platform_postgres_archiver_last_archived_age_seconds", "platform_postgres_archiver_last_failure_age_seconds",
		"platform_postgres_replica_streaming", `platform_postgres_database_size_bytes{database="template0"}`} {
		if _, ok := got[absent]; ok {
			t.Errorf("primary: %s is present", absent)
		}
	}

	standby := newPGCollector(ctx, localConnect(b), log)
	got = scrape(t, standby)
	for series, check := range map[string]func(float64) bool{
		"platform_postgres_up":                                  eq(1),
		"platform_postgres_collect_errors":                      eq(0),
		`platform_postgres_role{role="replica"}`:                eq(1),
		"platform_postgres_timeline_id":                         eq(1),
		"platform_postgres_replica_streaming":                   eq(1),
		"platform_postgres_replica_replay_lag_bytes":            atLeast(0),
		"platform_postgres_replica_replay_lag_seconds":          atLeast(0),
		"platform_postgres_wal_files":                           atLeast(1),
		`platform_postgres_database_size_bytes{database="app"}`: atLeast(1 << 20),
	} {
		v, ok := got[series]
		if !ok || !check(v) {
			t.Errorf("standby: %s = %v (present %v)", series, v, ok)
		}
	}
	if names := filter(got, "platform_postgres_standby_"); len(names) > 0 {
		t.Errorf("standby: a standby's figures %v", names)
	}

	// Every name a scrape returns is one MetricNames gives.
	for series := range got {
		name, _, _ := strings.Cut(series, "{")
		if !slices.Contains(MetricNames(), name) {
			t.Errorf("%s is not in MetricNames", name)
		}
	}

	// The session is not a superuser's, and writes nothing.
	conn, err := standby.session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var superuser, readOnly string
	if err := conn.QueryRow(ctx, "SELECT current_setting('is_superuser'), current_setting('transaction_read_only')").Scan(&superuser, &readOnly); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if superuser != "off" || readOnly != "on" {
		t.Errorf("the scrape's session: is_superuser %s, transaction_read_only %s; want off, on", superuser, readOnly)
	}
	conn, err = primary.session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE nope (id int)")
	conn.Close(ctx)
	if err == nil {
		t.Error("the scrape's session created a table")
	}

	// A PostgreSQL that does not answer is up 0, and nothing else.
	down := newPGCollector(ctx, func(context.Context) (*pgx.Conn, error) { return nil, errors.New("connection refused") }, log)
	if got := scrape(t, down); len(got) != 1 || got["platform_postgres_up"] != 0 {
		t.Errorf("down: %v, want platform_postgres_up 0 alone", got)
	}
}

func eq(want float64) func(float64) bool     { return func(v float64) bool { return v == want } }
func atLeast(min float64) func(float64) bool { return func(v float64) bool { return v >= min } }

func filter(series map[string]float64, part string) []string {
	var out []string
	for k := range series {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// The archiver's figures from a real archiver: failing (its command finds
// no flag file), then archiving once the flag is there.
func TestCollectorReadsTheArchiver(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "pgarchive")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// PostgreSQL's user writes there.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(dir, "archive-works")
	inst := postgrestest.NewInstance(t, "pg-marchive")
	inst.Settings.Archive = &postgres.Archive{Command: fmt.Sprintf("test -e %s && cp %%p %s/%%f", flag, dir), Timeout: "0"}
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.ConfigurePrimary(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, inst)
	switchWAL := func() {
		t.Helper()
		conn, err := inst.Connect(ctx, "postgres")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS t (x int); INSERT INTO t VALUES (1); SELECT pg_switch_wal()"); err != nil {
			t.Fatal(err)
		}
	}
	c := newPGCollector(ctx, localConnect(inst), testr.New(t))
	switchWAL()
	var got map[string]float64
	postgrestest.Eventually(t, 30*time.Second, "an archive failure", func() error {
		got = scrape(t, c)
		if got["platform_postgres_archiver_failed_total"] < 1 || got["platform_postgres_archiver_ready_wal_files"] < 1 {
			return fmt.Errorf("archiver: %v", filter(got, "archiver"))
		}
		return nil
	})
	if age, ok := got["platform_postgres_archiver_last_failure_age_seconds"]; !ok || age > 60 {
		t.Errorf("failing: last failure age %v (present %v)", age, ok)
	}
	if _, ok := got["platform_postgres_archiver_last_archived_age_seconds"]; ok {
		t.Error("failing: a last archived age, though nothing was archived")
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	switchWAL()
	postgrestest.Eventually(t, 90*time.Second, "archived", func() error {
		got = scrape(t, c)
		if got["platform_postgres_archiver_archived_total"] < 1 || got["platform_postgres_archiver_ready_wal_files"] != 0 {
			return fmt.Errorf("archiver: %v", filter(got, "archiver"))
		}
		return nil
	})
	if age, ok := got["platform_postgres_archiver_last_archived_age_seconds"]; !ok || age > 60 {
		t.Errorf("archiving: last archived age %v (present %v)", age, ok)
	}
	if got["platform_postgres_collect_errors"] != 0 {
		t.Errorf("collect errors: %v", got["platform_postgres_collect_errors"])
	}
}

// A scrape that finds another holding the turn until its deadline fails,
// rather than report PostgreSQL down, and opens no connection.
func TestScrapeWaitsForItsTurn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	connected := false
	c := newPGCollector(ctx, func(context.Context) (*pgx.Conn, error) { connected = true; return nil, errors.New("no") }, testr.New(t))
	c.turn <- struct{}{}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "another scrape ran") || len(families) != 0 || connected {
		t.Errorf("gather while another scrape runs: %v, %d families, connected %v; want an error alone", err, len(families), connected)
	}
}
