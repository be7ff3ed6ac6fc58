package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// Default values of Settings.
const (
	DefaultMaxWALSenders = 10
	DefaultWALKeepSize   = "512MB"
)

// Settings are what the operator decides for every instance of a cluster,
// from the cluster's spec and membership.
type Settings struct {
	// MaxWALSenders bounds the replication connections (standbys, clones,
	// rewinds); 0 means DefaultMaxWALSenders.
	MaxWALSenders int
	// WALKeepSize is how much WAL a primary keeps for standbys that fall
	// behind, so that they can catch up without a new clone; empty means
	// DefaultWALKeepSize.
	WALKeepSize string
	// Synchronous lists the standbys of synchronous replication; its zero
	// value is asynchronous replication.
	Synchronous Synchronous
	// SuperuserAccess lets the postgres role log in over the network (with
	// its password). Without it, only the local socket reaches it.
	SuperuserAccess bool
	// StreamThroughSlot makes a standby stream through the physical
	// replication slot its primary keeps for it (SlotName of its name,
	// which the primary's SyncSlots makes): the primary then keeps the WAL
	// the standby has not received. Without the slot the standby cannot
	// stream, so its primary must make it first.
	StreamThroughSlot bool
	// Archive, when set, archives every WAL file the instance writes or
	// receives; nil turns archiving off.
	Archive *Archive
	// Recovery, when set, replays archived WAL up to a target, then
	// promotes: the first instance of a cluster restored from an object
	// store, while recovery.signal is there (WriteRecoverySignal).
	Recovery *Recovery
	// Parameters are the user's parameters, checked by ValidateParameters,
	// and by CheckParameters before a new set of them is written.
	Parameters map[string]string
	// TLS, when set, turns TLS on (ssl = on, with its files) and makes
	// pg_hba accept TCP connections only over TLS (hostssl); nil leaves
	// TLS off, as for an instance whose certificate is not written yet.
	TLS *TLS
	// RefuseTCPWithoutTLS: while TLS is nil, pg_hba accepts no TCP
	// connection at all, only the socket's, rather than accept them in
	// plain text.
	RefuseTCPWithoutTLS bool
}

// hbaNetwork is how the settings' pg_hba admits TCP connections.
func (s Settings) hbaNetwork() HBANetwork {
	switch {
	case s.TLS != nil:
		return HBAOverTLS
	case s.RefuseTCPWithoutTLS:
		return HBASocketOnly
	}
	return HBAPlainText
}

// TLS are the files of the instance's server certificate, as WriteTLS
// writes them.
type TLS struct {
	// CertFile and KeyFile are the server's certificate and key, CAFile
	// the cluster's CA certificate, which clients and standbys verify the
	// server with.
	CertFile, KeyFile, CAFile string
}

// MinTLSVersion is ssl_min_protocol_version: every client the operator
// makes (pgx, libpq 15) speaks TLS 1.3.
const MinTLSVersion = "TLSv1.3"

// Archive is continuous archiving.
type Archive struct {
	// Command is archive_command: %p is the file's path.
	Command string
	// Timeout is archive_timeout, such as "300s": a WAL file is switched,
	// and so archived, at least this often while anything is written.
	Timeout string
}

// Recovery is a recovery from archived WAL. At most one target is set;
// none replays the whole archive.
type Recovery struct {
	// RestoreCommand is restore_command: %f the file's name, %p where to
	// write it.
	RestoreCommand string
	// TargetTime (a timestamp PostgreSQL reads, such as RFC 3339),
	// TargetLSN and TargetName (a restore point) are recovery_target_*.
	TargetTime, TargetLSN, TargetName string
}

// Synchronous is quorum synchronous replication: each commit waits until
// Number of Standbys (application names) have flushed it.
type Synchronous struct {
	Number   int
	Standbys []string
}

// render renders synchronous_standby_names: ANY n ("a","b"). Names are
// double-quoted, with double quotes doubled, so that any application name
// matches as written.
func (s Synchronous) render() (string, error) {
	if len(s.Standbys) == 0 {
		if s.Number != 0 {
			return "", fmt.Errorf("synchronous replication asks for %d standbys but names none", s.Number)
		}
		return "", nil
	}
	if s.Number < 1 || s.Number > len(s.Standbys) {
		return "", fmt.Errorf("synchronous replication asks for %d of %d standbys: want 1 to %d", s.Number, len(s.Standbys), len(s.Standbys))
	}
	names := make([]string, len(s.Standbys))
	for i, n := range s.Standbys {
		if n == "" || strings.ContainsAny(n, "\x00\n\r") {
			return "", fmt.Errorf("synchronous standby name %q is empty or has a newline", n)
		}
		names[i] = `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
	}
	return fmt.Sprintf("ANY %d (%s)", s.Number, strings.Join(names, ",")), nil
}

// Config is everything operator.conf is rendered from.
type Config struct {
	// ListenAddresses is PostgreSQL's listen_addresses: empty listens on
	// the socket only.
	ListenAddresses string
	Port            int
	// SocketDir is the directory of the Unix socket.
	SocketDir string
	Settings
	// Primary is the primary a standby follows; nil on a primary. Its
	// ApplicationName must be the instance's name, which
	// synchronous_standby_names matches.
	Primary *ConnInfo
}

// RenderConfig renders operator.conf, the include file the operator owns:
// the parameters it sets itself, then the user's, sorted, every value
// quoted. It refuses the user's parameters that ValidateParameters refuses,
// and a Primary with a password (give a PassFile).
func RenderConfig(c Config) (string, error) {
	if err := ValidateParameters(c.Parameters); err != nil {
		return "", err
	}
	if c.Port < 1 || c.Port > 65535 {
		return "", fmt.Errorf("port %d is out of range", c.Port)
	}
	if c.SocketDir == "" {
		return "", fmt.Errorf("no socket directory")
	}
	syncNames, err := c.Synchronous.render()
	if err != nil {
		return "", err
	}
	maxSenders := c.MaxWALSenders
	if maxSenders == 0 {
		maxSenders = DefaultMaxWALSenders
	}
	keep := c.WALKeepSize
	if keep == "" {
		keep = DefaultWALKeepSize
	}
	owned := [][2]string{
		{"listen_addresses", c.ListenAddresses},
		{"port", strconv.Itoa(c.Port)},
		{"unix_socket_directories", c.SocketDir},
		{"wal_level", "replica"},
		{"hot_standby", "on"},
		// pg_rewind needs either data checksums or hint bits in the WAL;
		// initdb enables checksums, but a data directory cloned from
		// elsewhere may lack them.
		{"wal_log_hints", "on"},
		{"max_wal_senders", strconv.Itoa(maxSenders)},
		{"wal_keep_size", keep},
		{"password_encryption", "scram-sha-256"},
		{"synchronous_standby_names", syncNames},
		// Always written, even on a primary: a standby follows the
		// primary's timeline after a failover.
		{"recovery_target_timeline", "latest"},
		// The instance manager collects postgres's stderr.
		{"log_destination", "stderr"},
		{"logging_collector", "off"},
	}
	if a := c.Archive; a != nil {
		// always: a standby archives what it receives too, so that a
		// failover leaves no gap in the archive where the former primary
		// had not archived yet; the store takes the same file twice.
		owned = append(owned, [2]string{"archive_mode", "always"}, [2]string{"archive_command", a.Command}, [2]string{"archive_timeout", a.Timeout})
	}
	if r := c.Recovery; r != nil {
		owned = append(owned, [2]string{"restore_command", r.RestoreCommand}, [2]string{"recovery_target_action", "promote"})
		for _, t := range [][2]string{{"recovery_target_time", r.TargetTime}, {"recovery_target_lsn", r.TargetLSN}, {"recovery_target_name", r.TargetName}} {
			if t[1] != "" {
				owned = append(owned, t)
			}
		}
	}
	if t := c.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
			return "", fmt.Errorf("TLS needs a certificate, a key and a CA file")
		}
		owned = append(owned, [2]string{"ssl", "on"}, [2]string{"ssl_cert_file", t.CertFile}, [2]string{"ssl_key_file", t.KeyFile},
			[2]string{"ssl_ca_file", t.CAFile}, [2]string{"ssl_min_protocol_version", MinTLSVersion})
	}
	if c.Primary != nil {
		if err := c.Primary.validate(); err != nil {
			return "", fmt.Errorf("primary: %w", err)
		}
		if c.Primary.Password != "" {
			return "", fmt.Errorf("primary connection info has a password, which anyone with pg_read_all_settings could read in primary_conninfo: give a passfile")
		}
		owned = append(owned, [2]string{"primary_conninfo", c.Primary.String()})
		if c.StreamThroughSlot && c.Primary.ApplicationName != "" {
			owned = append(owned, [2]string{"primary_slot_name", SlotName(c.Primary.ApplicationName)})
		}
	}
	for _, kv := range owned {
		if strings.ContainsAny(kv[1], "\x00\n\r") {
			return "", fmt.Errorf("%s has a newline or a NUL character", kv[0])
		}
	}

	var b strings.Builder
	b.WriteString("# Written by the PostgreSQL instance manager; changes are overwritten.\n")
	for _, kv := range owned {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], quoteConfValue(kv[1]))
	}
	if len(c.Parameters) > 0 {
		b.WriteString(parametersHeader)
		b.WriteString(renderParameters(c.Parameters))
	}
	return b.String(), nil
}

// parametersHeader starts the user's parameters in operator.conf, which
// end with the file.
const parametersHeader = "# Parameters of the cluster's spec\n"

// userParameters is the user's part of operator.conf, as RenderConfig
// wrote it.
func userParameters(conf string) string {
	_, params, _ := strings.Cut(conf, parametersHeader)
	return params
}
