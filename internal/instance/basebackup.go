package instance

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// `platform-operator instance basebackup` is the command of a BackupJob's
// run of a PostgresCluster with a volume target: the run's Job streams a
// base backup from an instance into the run's new claim, as the backup
// role, and says where the backup starts in its termination message.

// BaseBackupOptions are the flags of `instance basebackup`, and the
// password from the environment.
type BaseBackupOptions struct {
	Host, User     string
	Port           int
	Dir, Label     string
	TerminationLog string
	BinDir         string
	Password       string
	// CACert is the server's CA certificate (PEM, from EnvCACert): with
	// it the tool connects with sslmode=verify-full.
	CACert string
}

// ParseBaseBackupOptions reads the flags of `instance basebackup` and the
// environment: the backup role's password in PGPASSWORD (a Secret's key
// in the Job), so that it is never on a command line.
func ParseBaseBackupOptions(args []string, getenv func(string) string, usage io.Writer) (BaseBackupOptions, error) {
	opts := BaseBackupOptions{}
	fs := flag.NewFlagSet("instance basebackup", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&opts.Host, "host", "", "the instance to copy (required)")
	fs.IntVar(&opts.Port, "port", pgspec.Port, "its PostgreSQL port")
	fs.StringVar(&opts.User, "user", postgres.BackupUser, "the role to stream as, with the replication right")
	fs.StringVar(&opts.Dir, "dir", pgspec.BaseBackupDir, "the data directory to make (absolute)")
	fs.StringVar(&opts.Label, "label", "", "the backup's label (required)")
	fs.StringVar(&opts.TerminationLog, "termination-log", pgspec.TerminationLog, "where to write the result for the operator; empty for nowhere")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.BinDir = envOr(getenv, pgspec.EnvPGBinDir, pgspec.BinDir)
	opts.Password = getenv(pgspec.EnvPassword)
	opts.CACert = getenv(pgspec.EnvCACert)
	var problems []error
	if opts.Host == "" {
		problems = append(problems, errors.New("--host is required"))
	}
	if opts.Label == "" {
		problems = append(problems, errors.New("--label is required"))
	}
	if !filepath.IsAbs(opts.Dir) {
		problems = append(problems, fmt.Errorf("--dir %q is not an absolute path", opts.Dir))
	}
	if opts.Password == "" {
		problems = append(problems, fmt.Errorf("%s is empty: the backup role's password comes from the environment", pgspec.EnvPassword))
	}
	return opts, errors.Join(problems...)
}

// TakeBaseBackup takes the base backup opts say and writes its result to
// the termination log.
func TakeBaseBackup(ctx context.Context, opts BaseBackupOptions, log logr.Logger) (pgspec.BaseBackupResult, error) {
	backup := postgres.BaseBackup{
		BinDir: opts.BinDir, Dir: opts.Dir, Label: opts.Label, Log: log,
		Source: postgres.ConnInfo{Host: opts.Host, Port: opts.Port, User: opts.User, DBName: "postgres", Password: opts.Password},
	}
	cleanup, err := toolTLS(&backup.Source, opts.CACert)
	if err != nil {
		return pgspec.BaseBackupResult{}, err
	}
	defer cleanup()
	label, err := backup.Take(ctx)
	if err != nil {
		return pgspec.BaseBackupResult{}, err
	}
	result := pgspec.BaseBackupResult{StartLSN: label.StartLSN.String(), EndLSN: label.EndLSN.String(), Timeline: label.Timeline, FromStandby: label.FromStandby}
	return result, writeResult(opts.TerminationLog, result)
}

// writeResult writes a base backup's result to the termination log at
// path, where the operator reads it; nowhere for an empty path.
func writeResult(path string, result pgspec.BaseBackupResult) error {
	if path == "" {
		return nil
	}
	data, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("encode the result: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write the result to %s: %w", path, err)
	}
	return nil
}
