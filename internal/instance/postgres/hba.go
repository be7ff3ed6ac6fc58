package postgres

import "strings"

// ReplicationUser is the role standbys replicate with, and pg_rewind reads
// a primary with.
const ReplicationUser = "streaming_replica"

// BackupUser is the role base backups stream with: replication rights
// only, and a password of its own, so that a backup's credentials give no
// access to the data through SQL and can be changed without touching the
// standbys'.
const BackupUser = "streaming_backup"

// SuperUser is the superuser role initdb makes and the instance manager
// connects as over the socket.
const SuperUser = "postgres"

// RenderHBA renders pg_hba.conf. The first matching line decides:
//
//   - the Unix socket is trusted: its directory is 0700 and owned by the
//     instance's user, so only that user (the instance manager) reaches it;
//   - replication, over the network, only as ReplicationUser or
//     BackupUser, with a password;
//   - the superuser cannot log in over the network unless superuserAccess;
//   - everyone else logs in with a password.
//
// With tls every network line is hostssl: a connection without TLS
// matches no line and is refused. Without it (no certificate written yet)
// they are host lines.
func RenderHBA(superuserAccess, tls bool) string {
	network := "host   "
	if tls {
		network = "hostssl"
	}
	lines := []string{
		"# Written by the PostgreSQL instance manager; changes are overwritten.",
		"# TYPE  DATABASE     USER               ADDRESS  METHOD",
		"local   all          all                         trust",
		network + " replication  " + ReplicationUser + "  all      scram-sha-256",
		network + " replication  " + BackupUser + "   all      scram-sha-256",
	}
	if !superuserAccess {
		lines = append(lines, network+" all          "+SuperUser+"           all      reject")
	}
	lines = append(lines, network+" all          all                all      scram-sha-256")
	return strings.Join(lines, "\n") + "\n"
}
