package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ConnInfo says how to reach a PostgreSQL server: the source of a clone or
// a rewind, the primary a standby follows, or a server a test logs into.
type ConnInfo struct {
	// Host is a host name, an IP address or, starting with a slash, the
	// directory of a Unix socket.
	Host string
	Port int
	User string
	// DBName is the database; replication connections ignore it.
	DBName string
	// Password is for connections made by this process (pgx) or by a tool
	// it runs (in the tool's environment, never on its command line). A
	// primary_conninfo refuses it: use PassFile.
	Password string
	// PassFile is a libpq password file (see WritePassFile), read by
	// whoever connects: libpq in postgres's WAL receiver, or pgx.
	PassFile string
	// ApplicationName names the connection in pg_stat_activity and
	// pg_stat_replication; synchronous_standby_names matches it.
	ApplicationName string
	// SSLMode is libpq's sslmode; empty means libpq's default, "prefer":
	// TLS when the server offers it, unverified. The instance manager's
	// own connections between instances say verify-full (or verify-ca)
	// with SSLRootCert; the Unix socket never uses TLS.
	SSLMode string
	// SSLRootCert is the file of the CA certificates the server's
	// certificate is verified with (libpq's sslrootcert).
	SSLRootCert string
}

// String renders the connection as a libpq keyword/value string, every value
// quoted, without the password, so that it can be logged and written into
// primary_conninfo.
func (c ConnInfo) String() string {
	var b strings.Builder
	add := func(key, value string) {
		if value == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(quoteConnValue(value))
	}
	add("host", c.Host)
	if c.Port != 0 {
		add("port", strconv.Itoa(c.Port))
	}
	add("user", c.User)
	add("dbname", c.DBName)
	add("passfile", c.PassFile)
	add("application_name", c.ApplicationName)
	add("sslmode", c.sslMode())
	add("sslrootcert", c.SSLRootCert)
	return b.String()
}

func (c ConnInfo) sslMode() string {
	if c.SSLMode == "" {
		return "prefer"
	}
	return c.SSLMode
}

// quoteConnValue quotes a value for a libpq keyword/value string: in single
// quotes, with backslashes and single quotes escaped by a backslash. Quoting
// every value, not only those with spaces, keeps the rule in one place.
func quoteConnValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// validate refuses what no server could be reached with, and values that
// would break the files they are written into.
func (c ConnInfo) validate() error {
	if c.Host == "" {
		return fmt.Errorf("connection info has no host")
	}
	for _, f := range [][2]string{
		{"host", c.Host}, {"user", c.User}, {"dbname", c.DBName}, {"password", c.Password},
		{"passfile", c.PassFile}, {"application_name", c.ApplicationName}, {"sslmode", c.SSLMode},
		{"sslrootcert", c.SSLRootCert},
	} {
		if strings.ContainsAny(f[1], "\x00\n\r") {
			return fmt.Errorf("connection info: %s contains a newline or a NUL character", f[0])
		}
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("connection info: port %d is out of range", c.Port)
	}
	return nil
}

// Connect opens a connection with pgx. The password, when given, goes to
// pgx directly; otherwise pgx reads PassFile.
func Connect(ctx context.Context, c ConnInfo) (*pgx.Conn, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(c.String())
	if err != nil {
		return nil, fmt.Errorf("parse connection info %s: %w", c, err)
	}
	if c.Password != "" {
		cfg.Password = c.Password
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, &connectError{msg: fmt.Sprintf("connect to %s: %v", c, err), err: withoutConfig(err)}
	}
	return conn, nil
}

// connectError is a failed connection's error. It unwraps to the cause
// (a network error, or the server's *pgconn.PgError), not to pgx's
// *pgconn.ConnectError: that one keeps the whole configuration, password
// included, which anything that prints an error field by field (test
// matchers do) would show.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// withoutConfig is err without its *pgconn.ConnectError: the error that
// one wraps.
func withoutConfig(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return ce.Unwrap()
	}
	return err
}
