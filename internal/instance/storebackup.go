package instance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
	"example.com/platform-operator/internal/pgspec"
)

// `platform-operator instance basebackup-to-store` is the command of a
// BackupJob's run of a PostgresCluster with an objectStore target: the
// run's Job streams a base backup of the primary, as the backup role,
// into the cluster's object store (the same location its WAL is archived
// to), named after the run, and says where the backup starts and ends in
// its termination message.

// StoreBackupOptions are the flags of `instance basebackup-to-store`, and
// the password and the store from the environment.
type StoreBackupOptions struct {
	Host, User string
	Port       int
	// Label is the backup's label and its ID in the store: the run's name.
	Label string
	// Cluster and Namespace are the PostgresCluster's, for the record.
	Cluster, Namespace string
	TerminationLog     string
	BinDir             string
	Password           string
	Location           objectstore.Location
	// CACert is the server's CA certificate (PEM, from EnvCACert): with
	// it the tool connects with sslmode=verify-full.
	CACert string
}

// ParseStoreBackupOptions reads the flags of `instance
// basebackup-to-store` and the environment: the backup role's password in
// PGPASSWORD and the store in the ARCHIVE_S3_* variables (pgspec.StoreEnv,
// keys from the store's Secret), so that no secret is on a command line.
func ParseStoreBackupOptions(args []string, getenv func(string) string, usage io.Writer) (StoreBackupOptions, error) {
	opts := StoreBackupOptions{}
	fs := flag.NewFlagSet("instance basebackup-to-store", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&opts.Host, "host", "", "the primary to copy (required)")
	fs.IntVar(&opts.Port, "port", pgspec.Port, "its PostgreSQL port")
	fs.StringVar(&opts.User, "user", postgres.BackupUser, "the role to stream as, with the replication right")
	fs.StringVar(&opts.Label, "label", "", "the backup's label and its ID in the store (required)")
	fs.StringVar(&opts.Cluster, "cluster", "", "the PostgresCluster backed up, for the backup's record (required)")
	fs.StringVar(&opts.Namespace, "namespace", "", "its namespace, for the backup's record (required)")
	fs.StringVar(&opts.TerminationLog, "termination-log", pgspec.TerminationLog, "where to write the result for the operator; empty for nowhere")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.BinDir = envOr(getenv, pgspec.EnvPGBinDir, pgspec.BinDir)
	opts.Password = getenv(pgspec.EnvPassword)
	opts.CACert = getenv(pgspec.EnvCACert)
	var problems []error
	for _, required := range []struct{ flag, value string }{
		{"--host", opts.Host}, {"--label", opts.Label}, {"--cluster", opts.Cluster}, {"--namespace", opts.Namespace},
	} {
		if required.value == "" {
			problems = append(problems, fmt.Errorf("%s is required", required.flag))
		}
	}
	if opts.Password == "" {
		problems = append(problems, fmt.Errorf("%s is empty: the backup role's password comes from the environment", pgspec.EnvPassword))
	}
	loc, ok, err := pgspec.LocationFromEnv(pgspec.ArchiveStore, getenv)
	switch {
	case !ok:
		problems = append(problems, fmt.Errorf("no object store in the environment (%sS3_ENDPOINT is empty): it comes from the PostgresCluster's spec.backup.objectStore", pgspec.ArchiveStore))
	case err != nil:
		problems = append(problems, err)
	}
	opts.Location = loc
	return opts, errors.Join(problems...)
}

// cleanupTimeout bounds the removal of a failed attempt's data from the
// store, which runs also after the command was told to stop.
const cleanupTimeout = 30 * time.Second

// TakeStoreBackup streams the base backup opts say into the store, then
// writes its record there (the backup is whole from then on) and its
// result to the termination log. A backup of that ID whose record is in
// the store already (an earlier attempt that succeeded) is kept, not taken
// again: writing its data again would leave its record describing another
// copy for a while.
func TakeStoreBackup(ctx context.Context, opts StoreBackupOptions, now func() time.Time, log logr.Logger) (pgspec.BaseBackupResult, error) {
	store, err := objectstore.New(opts.Location)
	if err != nil {
		return pgspec.BaseBackupResult{}, err
	}
	if err := store.EnsureBucket(ctx); err != nil {
		return pgspec.BaseBackupResult{}, fmt.Errorf("make the bucket of %s: %w", opts.Location, err)
	}
	existing, err := store.ListBaseBackups(ctx)
	if err != nil {
		return pgspec.BaseBackupResult{}, fmt.Errorf("list the base backups of %s: %w", opts.Location, err)
	}
	for _, info := range existing {
		if info.ID == opts.Label {
			log.Info("The base backup is in the store already, made by an earlier attempt", "backup", info.ID, "store", opts.Location.String())
			result := storeResult(info, 0)
			result.PointInTime = markPointInTime(ctx, opts, info.EndedAt, now, log)
			return result, writeResult(opts.TerminationLog, result)
		}
	}

	started := now()
	var compressed bool
	var size int64
	backup := postgres.TarBaseBackup{
		BinDir: opts.BinDir, Label: opts.Label, Log: log,
		Source: postgres.ConnInfo{Host: opts.Host, Port: opts.Port, User: opts.User, DBName: "postgres", Password: opts.Password},
	}
	cleanup, err := toolTLS(&backup.Source, opts.CACert)
	if err != nil {
		return pgspec.BaseBackupResult{}, err
	}
	defer cleanup()
	label, err := backup.Stream(ctx, func(r io.Reader) error {
		counted := &countingReader{r: r}
		var putErr error
		compressed, putErr = store.PutBaseBackupData(ctx, opts.Label, counted)
		size = counted.n
		return putErr
	})
	if err != nil {
		// Data without a record is never restored, but takes room: a
		// retry writes it again anyway.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if cleanErr := store.DeleteBaseBackup(cleanup, objectstore.BackupInfo{ID: opts.Label, Compressed: opts.Location.Compress}); cleanErr != nil {
			log.Info("The data of the failed base backup stays in the store, without a record", "backup", opts.Label, "error", cleanErr.Error())
		}
		return pgspec.BaseBackupResult{}, err
	}
	info := objectstore.BackupInfo{
		ID: opts.Label, Cluster: opts.Cluster, Namespace: opts.Namespace,
		StartLSN: label.StartLSN.String(), EndLSN: label.EndLSN.String(), Timeline: label.Timeline,
		StartedAt: started.UTC(), EndedAt: now().UTC(), Compressed: compressed,
	}
	if err := store.PutBackupRecord(ctx, info); err != nil {
		return pgspec.BaseBackupResult{}, fmt.Errorf("write the record of base backup %s: %w", info.ID, err)
	}
	log.Info("Stored a base backup", "backup", info.ID, "store", opts.Location.String(), "bytes", size, "compressed", compressed)
	result := storeResult(info, size)
	result.PointInTime = markPointInTime(ctx, opts, info.EndedAt, now, log)
	return result, writeResult(opts.TerminationLog, result)
}

// backupPointInTime is the moment just after a backup that ended at ended
// which a recovery from it can target: its end rounded up to the next
// whole second, as recovery targets (RFC 3339) are, so never before the
// backup is consistent.
func backupPointInTime(ended time.Time) time.Time {
	return ended.Truncate(time.Second).Add(time.Second)
}

// markPointInTime commits a transaction on the primary opts names a
// second after backupPointInTime(ended), and returns that point (RFC
// 3339), or "" when it could not: PostgreSQL stops a recovery to a time at
// the first commit after it, and refuses to open when the archive ends
// before one, which an idle cluster might never write. The backup is whole
// either way; only a drill at the backup's end needs the mark.
func markPointInTime(ctx context.Context, opts StoreBackupOptions, ended time.Time, now func() time.Time, log logr.Logger) string {
	point := backupPointInTime(ended)
	if wait := point.Add(time.Second).Sub(now()); wait > 0 {
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(wait):
		}
	}
	info := postgres.ConnInfo{Host: opts.Host, Port: opts.Port, User: opts.User, DBName: "postgres", Password: opts.Password}
	cleanup, err := toolTLS(&info, opts.CACert)
	if err == nil {
		defer cleanup()
		err = commitMark(ctx, info)
	}
	if err != nil {
		log.Info("No commit marks the backup's end: a recovery cannot target it", "host", opts.Host, "error", err.Error())
		return ""
	}
	return point.UTC().Format(time.RFC3339)
}

// markTimeout bounds the mark's connection and commit: a primary that
// does not answer leaves the backup without a point in time, not the run
// unfinished.
const markTimeout = 30 * time.Second

// commitMark commits a transaction that changes nothing but is written to
// the WAL with its commit time: txid_current() gives it a transaction ID.
// The mark needs only to be in the primary's WAL, from which it is
// archived; it must not wait for a synchronous standby, which a cluster
// short of them would make the run do until they return. PostgreSQL does
// not make a transaction that wrote nothing before its commit record wait
// for one; synchronous_commit local (which any role may set) says so
// whatever the statement.
func commitMark(ctx context.Context, info postgres.ConnInfo) error {
	ctx, cancel := context.WithTimeout(ctx, markTimeout)
	defer cancel()
	conn, err := postgres.Connect(ctx, info)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SET synchronous_commit = local"); err != nil {
		return fmt.Errorf("commit the mark after the backup: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT txid_current()"); err != nil {
		return fmt.Errorf("commit the mark after the backup: %w", err)
	}
	return nil
}

// storeResult is the termination message of a backup in the store.
func storeResult(info objectstore.BackupInfo, size int64) pgspec.BaseBackupResult {
	return pgspec.BaseBackupResult{StartLSN: info.StartLSN, EndLSN: info.EndLSN, Timeline: info.Timeline, BackupID: info.ID, Size: size}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
