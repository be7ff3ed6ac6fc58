// Package postgres runs one PostgreSQL instance of a PostgresCluster: it is
// the library of the instance manager, the operator's subcommand that is
// PID 1 of an instance's pod. It knows nothing of Kubernetes: the instance
// manager decides (from the lease and the operator's orders) and this
// package acts on the data directory and the postgres process.
//
// What it owns, and why:
//
//   - Two files in the data directory, written whole on every change and
//     rendered by pure functions: operator.conf, included last from
//     postgresql.conf so that its settings win over initdb's, and
//     pg_hba.conf. pg_basebackup and pg_rewind copy both from the source
//     server, so CloneFrom and Rewind write them again afterwards.
//     postgresql.auto.conf (ALTER SYSTEM) is read after them and is not
//     managed here.
//   - The role of the instance: standby.signal and primary_conninfo. A
//     primary_conninfo never holds a password, only a passfile, because the
//     setting is readable by anyone granted pg_read_all_settings.
//   - The postgres process, run as a child (never daemonized) under the
//     instance's OS user, so that the instance manager supervises it and sees
//     it exit.
//
// Passwords reach PostgreSQL only as SCRAM-SHA-256 verifiers computed here
// (with github.com/xdg-go/scram and stringprep, PostgreSQL's SASLprep kept),
// never in clear text, so that no statement log or error report can show
// one.
//
// Every child process (initdb, postgres, pg_basebackup, pg_rewind,
// pg_controldata) runs with a minimal environment, not the caller's, so that
// a stray PGHOST or PGPASSWORD cannot redirect it, and with LC_ALL=C, so that
// the messages parsed here stay in English.
package postgres
