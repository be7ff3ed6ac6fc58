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
// network says how TCP connections are admitted: see HBANetwork.
func RenderHBA(superuserAccess bool, network HBANetwork) string {
	lines := []string{
		"# Written by the PostgreSQL instance manager; changes are overwritten.",
		"# TYPE  DATABASE     USER               ADDRESS  METHOD",
		"local   all          all                         trust",
	}
	if network == HBASocketOnly {
		return strings.Join(lines, "\n") + "\n"
	}
	lines = append(lines,
		network.lineType()+" replication  "+ReplicationUser+"  all      scram-sha-256",
		network.lineType()+" replication  "+BackupUser+"   all      scram-sha-256",
	)
	if !superuserAccess {
		lines = append(lines, network.lineType()+" all          "+SuperUser+"           all      reject")
	}
	lines = append(lines, network.lineType()+" all          all                all      scram-sha-256")
	return strings.Join(lines, "\n") + "\n"
}

// HBANetwork is how pg_hba admits TCP connections.
type HBANetwork int

const (
	// HBAPlainText: host lines, with or without TLS (an instance that has
	// no certificate and may serve without one).
	HBAPlainText HBANetwork = iota
	// HBAOverTLS: every network line is hostssl, so a connection without
	// TLS matches no line and is refused.
	HBAOverTLS
	// HBASocketOnly: no network line at all; only the instance manager,
	// on the socket, connects (an instance waiting for its certificate).
	HBASocketOnly
)

func (n HBANetwork) lineType() string {
	if n == HBAOverTLS {
		return "hostssl"
	}
	return "host   "
}
