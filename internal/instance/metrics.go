package instance

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"example.com/platform-operator/internal/instance/postgres"
)

// The instance manager's /metrics: PostgreSQL's own figures, read when
// Prometheus scrapes, over one connection of the scrape's own. The names
// are stable; docs/operating.md#postgresql-metrics documents them, and
// deploy/components/monitoring alerts on them and draws them.
//
// A scrape never blocks PostgreSQL nor the manager's loop: it runs in the
// HTTP server's goroutine, one at a time (a second waits for the first,
// within its own deadline), within scrapeTimeout; each statement within
// statementTimeout and waits for no lock longer than lockTimeout; every
// per-database or per-standby list is bounded by maxRows. The session
// connects as the superuser over the local socket, as the manager does,
// then takes the role pg_monitor for the rest of it (SET ROLE), read-only:
// the statements run with the rights of PostgreSQL's monitoring role, not
// a superuser's.
const (
	metricsNamespace = "platform_postgres"
	scrapeTimeout    = 5 * time.Second
	statementTimeout = "2s"
	lockTimeout      = "100ms"
	maxRows          = 64
)

// connectionStates are the states of pg_stat_activity a client backend
// can be in: each is exported, 0 when no backend is, so that a series does
// not vanish when its count falls to 0.
var connectionStates = []string{"active", "idle", "idle in transaction", "idle in transaction (aborted)", "fastpath function call", "disabled"}

// syncStates are pg_stat_replication's sync_state values.
var syncStates = []string{"async", "potential", "sync", "quorum"}

// allDescs and allNames are every metric's description and name, in the
// order of their declaration.
var (
	allDescs []*prometheus.Desc
	allNames []string
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	fq := prometheus.BuildFQName(metricsNamespace, "", name)
	d := prometheus.NewDesc(fq, help, labels, nil)
	allDescs, allNames = append(allDescs, d), append(allNames, fq)
	return d
}

var (
	upDesc                = desc("up", "1 when PostgreSQL answered this scrape's first query, 0 when it could not be reached.")
	roleDesc              = desc("role", "1 for the role the instance has now (primary, or replica while in recovery), 0 for the other.", "role")
	timelineDesc          = desc("timeline_id", "The timeline the instance writes (a primary) or receives and replays (a replica).")
	collectErrorsDesc     = desc("collect_errors", "Queries of this scrape that failed; their metrics are missing from it.")
	standbyLagBytesDesc   = desc("standby_lag_bytes", "On a primary, per standby (application_name in pg_stat_replication): how far its replay is behind the primary's current WAL position.", "standby")
	standbyLagSecondsDesc = desc("standby_lag_seconds", "On a primary, per standby: pg_stat_replication's replay_lag, from a commit's WAL written to its replay on the standby; 0 once the standby caught up and idles.", "standby")
	standbySyncStateDesc  = desc("standby_sync_state", "On a primary, per standby: 1 for its sync_state (async, potential, sync or quorum), 0 for the others.", "standby", "state")
	replicaLagBytesDesc   = desc("replica_replay_lag_bytes", "On a replica: WAL received but not yet replayed.")
	replicaLagSecondsDesc = desc("replica_replay_lag_seconds", "On a replica: seconds since the last replayed transaction committed on the primary; 0 when everything received is replayed.")
	replicaStreamingDesc  = desc("replica_streaming", "On a replica: 1 while its WAL receiver streams from the primary.")
	walFilesDesc          = desc("wal_files", "WAL segment files in pg_wal (pg_ls_waldir).")
	walBytesDesc          = desc("wal_bytes", "Size of the WAL segment files in pg_wal.")
	archivedDesc          = desc("archiver_archived_total", "WAL files archived since the statistics were reset (pg_stat_archiver.archived_count).")
	archiveFailedDesc     = desc("archiver_failed_total", "Failed attempts to archive a WAL file (pg_stat_archiver.failed_count).")
	lastArchivedAgeDesc   = desc("archiver_last_archived_age_seconds", "Seconds since the last WAL file was archived; absent when none ever was.")
	lastFailedAgeDesc     = desc("archiver_last_failure_age_seconds", "Seconds since the last failed archive attempt; absent when none ever failed.")
	archiveReadyDesc      = desc("archiver_ready_wal_files", "WAL files waiting to be archived (.ready files in pg_wal/archive_status).")
	connectionsDesc       = desc("connections", "Client backends by state (pg_stat_activity).", "state")
	maxConnectionsDesc    = desc("max_connections", "The max_connections setting.")
	xidAgeDesc            = desc("oldest_xid_age", "The age of the oldest unfrozen transaction ID of any database (max of age(datfrozenxid)): PostgreSQL stops assigning transaction IDs near 2^31.")
	databaseSizeDesc      = desc("database_size_bytes", "Size of each database that accepts connections.", "database")
	deadlocksDesc         = desc("database_deadlocks_total", "Deadlocks detected in each database that accepts connections (pg_stat_database).", "database")
	checkpointsTimedDesc  = desc("checkpoints_timed_total", "Checkpoints started by checkpoint_timeout (pg_stat_bgwriter.checkpoints_timed).")
	checkpointsReqDesc    = desc("checkpoints_requested_total", "Checkpoints requested by max_wal_size or by hand (pg_stat_bgwriter.checkpoints_req).")
)

// MetricNames are the names of every metric the /metrics of an instance
// can return, for the tests of the alerts and the dashboard.
func MetricNames() []string { return slices.Clone(allNames) }

// pgCollector reads the figures when scraped.
type pgCollector struct {
	// connect opens the scrape's connection.
	connect func(ctx context.Context) (*pgx.Conn, error)
	// base ends with the manager: a scrape then stops.
	base context.Context
	log  logr.Logger
	// turn admits one scrape at a time.
	turn chan struct{}
}

func newPGCollector(base context.Context, connect func(ctx context.Context) (*pgx.Conn, error), log logr.Logger) *pgCollector {
	return &pgCollector{connect: connect, base: base, log: log, turn: make(chan struct{}, 1)}
}

func (c *pgCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (c *pgCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.base, scrapeTimeout)
	defer cancel()
	select {
	case c.turn <- struct{}{}:
		defer func() { <-c.turn }()
	case <-ctx.Done():
		// Another scrape held the turn all along: this one says so
		// rather than report PostgreSQL down.
		ch <- prometheus.NewInvalidMetric(upDesc, fmt.Errorf("another scrape ran for %s", scrapeTimeout))
		return
	}
	conn, err := c.session(ctx)
	if err != nil {
		c.log.V(1).Info("PostgreSQL does not answer a scrape", "error", err.Error())
		ch <- gauge(upDesc, 0)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var inRecovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		c.log.V(1).Info("PostgreSQL does not answer a scrape", "error", err.Error())
		ch <- gauge(upDesc, 0)
		return
	}
	ch <- gauge(upDesc, 1)
	ch <- gauge(roleDesc, b2f(!inRecovery), "primary")
	ch <- gauge(roleDesc, b2f(inRecovery), "replica")
	failed := 0
	for _, q := range pgQueries {
		if q.primaryOnly && inRecovery || q.replicaOnly && !inRecovery {
			continue
		}
		if err := q.read(ctx, conn, ch); err != nil {
			failed++
			c.log.V(1).Info("A query of a scrape failed", "query", q.name, "error", err.Error())
		}
	}
	ch <- gauge(collectErrorsDesc, float64(failed))
}

// session connects and narrows the session to what a scrape needs.
func (c *pgCollector) session(ctx context.Context) (*pgx.Conn, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SET ROLE pg_monitor; SET default_transaction_read_only = on; "+
		"SET statement_timeout = '"+statementTimeout+"'; SET lock_timeout = '"+lockTimeout+"'"); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("set up the scrape's session: %w", err)
	}
	return conn, nil
}

// pgQuery reads one group of figures.
type pgQuery struct {
	name                     string
	primaryOnly, replicaOnly bool
	read                     func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error
}

var pgQueries = []pgQuery{
	{name: "timeline", primaryOnly: true, read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		// The WAL file name starts with the timeline written now; the
		// checkpoint's lags after a promotion.
		var tli int64
		if err := conn.QueryRow(ctx, "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint").Scan(&tli); err != nil {
			return err
		}
		ch <- gauge(timelineDesc, float64(tli))
		return nil
	}},
	{name: "standbys", primaryOnly: true, read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		rows, err := conn.Query(ctx, `SELECT application_name, coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::float8,
			coalesce(extract(epoch FROM replay_lag), 0)::float8, coalesce(sync_state, '')
			FROM pg_stat_replication ORDER BY application_name LIMIT $1`, maxRows)
		if err != nil {
			return err
		}
		defer rows.Close()
		seen := map[string]bool{}
		for rows.Next() {
			var name, state string
			var lagBytes, lagSeconds float64
			if err := rows.Scan(&name, &lagBytes, &lagSeconds, &state); err != nil {
				return err
			}
			if seen[name] {
				// Two senders of one name (a reconnect while the old one
				// ends): the first, in a fixed order, stands.
				continue
			}
			seen[name] = true
			ch <- gauge(standbyLagBytesDesc, lagBytes, name)
			ch <- gauge(standbyLagSecondsDesc, lagSeconds, name)
			for _, s := range syncStates {
				ch <- gauge(standbySyncStateDesc, b2f(s == state), name, s)
			}
		}
		return rows.Err()
	}},
	{name: "replica", replicaOnly: true, read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		var tli int64
		var lagBytes, lagSeconds float64
		var streaming bool
		if err := conn.QueryRow(ctx, `SELECT
			coalesce((SELECT received_tli FROM pg_stat_wal_receiver), (SELECT timeline_id FROM pg_control_checkpoint()))::bigint,
			coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0)::float8,
			CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
				ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8,
			coalesce((SELECT status = 'streaming' FROM pg_stat_wal_receiver), false)`).Scan(&tli, &lagBytes, &lagSeconds, &streaming); err != nil {
			return err
		}
		ch <- gauge(timelineDesc, float64(tli))
		ch <- gauge(replicaLagBytesDesc, max(lagBytes, 0))
		ch <- gauge(replicaLagSecondsDesc, max(lagSeconds, 0))
		ch <- gauge(replicaStreamingDesc, b2f(streaming))
		return nil
	}},
	{name: "wal", read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		var files, size, ready float64
		if err := conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`).Scan(&files, &size); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready'`).Scan(&ready); err != nil {
			return err
		}
		ch <- gauge(walFilesDesc, files)
		ch <- gauge(walBytesDesc, size)
		ch <- gauge(archiveReadyDesc, ready)
		return nil
	}},
	{name: "archiver", read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		var archived, failed float64
		var archivedAge, failedAge *float64
		if err := conn.QueryRow(ctx, `SELECT archived_count, failed_count,
			extract(epoch FROM now() - last_archived_time)::float8, extract(epoch FROM now() - last_failed_time)::float8
			FROM pg_stat_archiver`).Scan(&archived, &failed, &archivedAge, &failedAge); err != nil {
			return err
		}
		ch <- counter(archivedDesc, archived)
		ch <- counter(archiveFailedDesc, failed)
		if archivedAge != nil {
			ch <- gauge(lastArchivedAgeDesc, max(*archivedAge, 0))
		}
		if failedAge != nil {
			ch <- gauge(lastFailedAgeDesc, max(*failedAge, 0))
		}
		return nil
	}},
	{name: "connections", read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		rows, err := conn.Query(ctx, `SELECT coalesce(state, ''), count(*)::float8 FROM pg_stat_activity
			WHERE backend_type = 'client backend' GROUP BY 1`)
		if err != nil {
			return err
		}
		defer rows.Close()
		counts := map[string]float64{}
		for rows.Next() {
			var state string
			var n float64
			if err := rows.Scan(&state, &n); err != nil {
				return err
			}
			counts[state] += n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, s := range connectionStates {
			ch <- gauge(connectionsDesc, counts[s], s)
		}
		var maxConns float64
		if err := conn.QueryRow(ctx, `SELECT current_setting('max_connections')::float8`).Scan(&maxConns); err != nil {
			return err
		}
		ch <- gauge(maxConnectionsDesc, maxConns)
		return nil
	}},
	{name: "databases", read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		var xidAge float64
		if err := conn.QueryRow(ctx, `SELECT max(age(datfrozenxid))::float8 FROM pg_database`).Scan(&xidAge); err != nil {
			return err
		}
		ch <- gauge(xidAgeDesc, xidAge)
		rows, err := conn.Query(ctx, `SELECT d.datname, pg_database_size(d.oid)::float8, coalesce(s.deadlocks, 0)::float8
			FROM pg_database d LEFT JOIN pg_stat_database s ON s.datid = d.oid
			WHERE d.datallowconn ORDER BY d.datname LIMIT $1`, maxRows)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var size, deadlocks float64
			if err := rows.Scan(&name, &size, &deadlocks); err != nil {
				return err
			}
			ch <- gauge(databaseSizeDesc, size, name)
			ch <- counter(deadlocksDesc, deadlocks, name)
		}
		return rows.Err()
	}},
	{name: "checkpoints", read: func(ctx context.Context, conn *pgx.Conn, ch chan<- prometheus.Metric) error {
		var timed, requested float64
		if err := conn.QueryRow(ctx, `SELECT checkpoints_timed, checkpoints_req FROM pg_stat_bgwriter`).Scan(&timed, &requested); err != nil {
			return err
		}
		ch <- counter(checkpointsTimedDesc, timed)
		ch <- counter(checkpointsReqDesc, requested)
		return nil
	}},
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricsConnection is a scrape's connection: the superuser over the
// socket, as the manager's own, named apart in pg_stat_activity.
func (m *Manager) metricsConnection(ctx context.Context) (*pgx.Conn, error) {
	info := m.pg.LocalConnInfo("postgres")
	info.ApplicationName = "instance-manager-metrics"
	return postgres.Connect(ctx, info)
}
