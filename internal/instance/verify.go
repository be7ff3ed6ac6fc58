package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// `platform-operator instance verify` is the command of a restore drill of
// a PostgresCluster's backup: it runs the BackupJob's verify query in the
// temporary cluster restored from the backup, and passes only when the
// query's first column of its first row is true. What it says (the
// database's message, or that the query returned false) is its
// termination message, which the operator records on the backup.

// VerifyOptions are the flags and environment of `instance verify`.
type VerifyOptions struct {
	Host, User, Database, Password, SQL string
	Port                                int
	TerminationLog                      string
	// CACert is the server's CA certificate (PEM, from EnvCACert): with
	// it the tool connects with sslmode=verify-full.
	CACert string
}

// ParseVerifyOptions reads the flags of `instance verify` and its
// environment.
func ParseVerifyOptions(args []string, getenv func(string) string, usage io.Writer) (VerifyOptions, error) {
	opts := VerifyOptions{}
	fs := flag.NewFlagSet("instance verify", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&opts.Host, "host", "", "the restored instance (required)")
	fs.IntVar(&opts.Port, "port", pgspec.Port, "its PostgreSQL port")
	fs.StringVar(&opts.TerminationLog, "termination-log", pgspec.TerminationLog, "where to write the result for the operator; empty for nowhere")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.User, opts.Database = getenv(pgspec.EnvUser), getenv(pgspec.EnvDatabase)
	opts.Password, opts.SQL = getenv(pgspec.EnvPassword), getenv(pgspec.EnvVerifySQL)
	opts.CACert = getenv(pgspec.EnvCACert)
	var problems []error
	if opts.Host == "" {
		problems = append(problems, errors.New("--host is required"))
	}
	for name, v := range map[string]string{pgspec.EnvUser: opts.User, pgspec.EnvDatabase: opts.Database, pgspec.EnvPassword: opts.Password, pgspec.EnvVerifySQL: opts.SQL} {
		if v == "" {
			problems = append(problems, fmt.Errorf("%s is empty", name))
		}
	}
	return opts, errors.Join(problems...)
}

// errVerifyFalse is a query that ran and did not return true.
var errVerifyFalse = errors.New("the verify query did not return true")

// Verify runs the query and writes what came of it to the termination log:
// nil when it returned true.
func Verify(ctx context.Context, opts VerifyOptions) error {
	err := verify(ctx, opts)
	message := "the verify query returned true"
	if err != nil {
		message = err.Error()
	}
	if opts.TerminationLog != "" {
		if werr := os.WriteFile(opts.TerminationLog, []byte(message), 0o644); werr != nil {
			return errors.Join(err, fmt.Errorf("write the result to %s: %w", opts.TerminationLog, werr))
		}
	}
	return err
}

func verify(ctx context.Context, opts VerifyOptions) error {
	info := postgres.ConnInfo{Host: opts.Host, Port: opts.Port, User: opts.User, Password: opts.Password, DBName: opts.Database}
	cleanup, err := toolTLS(&info, opts.CACert)
	if err != nil {
		return err
	}
	defer cleanup()
	conn, err := postgres.Connect(ctx, info)
	if err != nil {
		return fmt.Errorf("connect to the restored copy: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, opts.SQL)
	if err != nil {
		return fmt.Errorf("the verify query failed: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("the verify query failed: %w", err)
		}
		return fmt.Errorf("%w: it returned no row", errVerifyFalse)
	}
	values, err := rows.Values()
	if err != nil {
		return fmt.Errorf("the verify query failed: %w", err)
	}
	if len(values) == 0 {
		return fmt.Errorf("%w: it returned no column", errVerifyFalse)
	}
	if b, ok := values[0].(bool); ok && b {
		rows.Close()
		return rows.Err()
	}
	return fmt.Errorf("%w: its first column is %s", errVerifyFalse, describe(values[0]))
}

// describe says what a first column that is not true holds without
// showing it: the result goes into the BackupJob's status and events,
// which more people read than the restored data. false and NULL say
// nothing of the data; any other value, its type and a digest, by which
// whoever may read the data can tell which value it was.
func describe(v any) string {
	switch v {
	case nil:
		return "NULL"
	case false:
		return "false"
	}
	sum := sha256.Sum256([]byte(fmt.Sprint(v)))
	return fmt.Sprintf("not true: a %s of SHA-256 %s", typeName(v), hex.EncodeToString(sum[:8]))
}

func typeName(v any) string {
	if _, ok := v.(string); ok {
		return "string"
	}
	return fmt.Sprintf("%T", v)
}
