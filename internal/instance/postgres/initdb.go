package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// bootstrapStopTimeout bounds the shutdown that ends InitDB's temporary
// start.
const bootstrapStopTimeout = time.Minute

// InitOptions are the roles and the database a new cluster starts with.
type InitOptions struct {
	// SuperuserPassword is the postgres role's password; empty leaves it
	// without one (it can then log in only over the socket).
	SuperuserPassword string
	// ReplicationPassword is the password of ReplicationUser, which
	// standbys replicate with and pg_rewind reads a primary with.
	ReplicationPassword string
	// Database is the application's database, owned by Owner; empty makes
	// none.
	Database string
	// Owner is the application's role, made with LOGIN and OwnerPassword.
	Owner         string
	OwnerPassword string
}

func (o InitOptions) validate() error {
	var errs []error
	if o.ReplicationPassword == "" {
		errs = append(errs, errors.New("no replication password"))
	}
	if o.Database != "" && o.Owner == "" {
		errs = append(errs, fmt.Errorf("database %q has no owner", o.Database))
	}
	if o.Owner != "" && o.OwnerPassword == "" {
		errs = append(errs, fmt.Errorf("owner %q has no password", o.Owner))
	}
	if o.Owner == SuperUser || o.Owner == ReplicationUser || o.Owner == BackupUser {
		errs = append(errs, fmt.Errorf("owner %q is a role the operator reserves", o.Owner))
	}
	return errors.Join(errs...)
}

// InitDB makes a new database cluster as a primary: initdb (SCRAM, data
// checksums), the owned configuration, then a start on the socket only to
// make ReplicationUser, the owner and the database, and a clean stop. It
// works in a staging directory next to the data directory and renames it
// into place last, so that a failure leaves no data directory that
// Initialized would take for a good one.
func (i *Instance) InitDB(ctx context.Context, opts InitOptions) error {
	if err := i.validate(); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return fmt.Errorf("initialize %s: %w", i.DataDir, err)
	}
	if i.Initialized() {
		return fmt.Errorf("initialize %s: already initialized", i.DataDir)
	}
	if err := i.checkEmpty(); err != nil {
		return fmt.Errorf("initialize %s: %w", i.DataDir, err)
	}
	staging := i.stagingDir()
	// A staging directory is only ever left by a failed attempt.
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("initialize %s: remove the staging directory of a failed attempt: %w", i.DataDir, err)
	}
	if err := i.mkdirOwned(staging); err != nil {
		return fmt.Errorf("initialize %s: %w", i.DataDir, err)
	}
	log := i.Log.WithValues("dataDir", i.DataDir)
	log.Info("Initializing a new database cluster")
	if err := i.initDB(ctx, staging, opts); err != nil {
		if rmErr := os.RemoveAll(staging); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove the staging directory: %w", rmErr))
		}
		return fmt.Errorf("initialize %s: %w", i.DataDir, err)
	}
	if err := i.moveIntoPlace(staging); err != nil {
		return fmt.Errorf("initialize %s: %w", i.DataDir, err)
	}
	log.Info("Initialized a new database cluster")
	return nil
}

func (i *Instance) initDB(ctx context.Context, dir string, opts InitOptions) error {
	if _, err := i.runTool(ctx, "initdb",
		nil,
		"--pgdata", dir,
		"--username", SuperUser,
		// The socket is trusted and pg_hba.conf is rewritten at once;
		// scram-sha-256 for TCP also sets password_encryption.
		"--auth-local", "trust",
		"--auth-host", "scram-sha-256",
		// Checksums catch corruption on disk, and let pg_rewind work.
		"--data-checksums",
		"--encoding", "UTF8",
		"--locale", "C",
		"--no-instructions",
	); err != nil {
		return err
	}
	if _, err := i.configure(dir, nil); err != nil {
		return err
	}
	statements, err := bootstrapStatements(opts)
	if err != nil {
		return err
	}
	return i.withTemporaryServer(ctx, dir, func(ctx context.Context) error {
		conn, err := i.Connect(ctx, "postgres")
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		for _, s := range statements {
			if _, err := conn.Exec(ctx, s.sql); err != nil {
				return fmt.Errorf("%s: %w", s.what, err)
			}
		}
		return nil
	})
}

// withTemporaryServer starts postgres on dir listening on the socket only,
// so that nobody else can connect while roles are made, and without
// synchronous replication, runs f once it is ready, and stops it with a
// clean (fast) shutdown.
func (i *Instance) withTemporaryServer(ctx context.Context, dir string, f func(context.Context) error) (err error) {
	// No synchronous standby exists yet: the statements' commits must not
	// wait for one.
	p, err := i.start(ctx, dir, "listen_addresses=", "synchronous_standby_names=")
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bootstrapStopTimeout)
		defer cancel()
		mode := StopFast
		if err != nil {
			mode = StopImmediate
		}
		if stopErr := p.Stop(stopCtx, mode); stopErr != nil {
			_ = p.Kill()
			err = errors.Join(err, stopErr)
			return
		}
		if waitErr := p.Wait(); waitErr != nil && err == nil {
			err = fmt.Errorf("temporary PostgreSQL exited: %w", waitErr)
		}
	}()
	if err := p.WaitReady(ctx); err != nil {
		return err
	}
	return f(ctx)
}

type statement struct {
	what string
	sql  string
}

// bootstrapStatements are the statements that make the roles and the
// database, with SCRAM verifiers in place of passwords.
func bootstrapStatements(opts InitOptions) ([]statement, error) {
	var out []statement
	replVerifier, err := SCRAMVerifier(opts.ReplicationPassword)
	if err != nil {
		return nil, err
	}
	out = append(out,
		statement{"create the replication role", fmt.Sprintf("CREATE ROLE %s WITH REPLICATION LOGIN PASSWORD %s",
			quoteIdent(ReplicationUser), quoteLiteral(replVerifier))},
		// pg_rewind reads the source server with these functions; granting
		// them spares giving the replication role superuser.
		statement{"grant pg_rewind's functions to the replication role", "GRANT EXECUTE ON FUNCTION " +
			"pg_catalog.pg_ls_dir(text, boolean, boolean), pg_catalog.pg_stat_file(text, boolean), " +
			"pg_catalog.pg_read_binary_file(text), pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO " +
			quoteIdent(ReplicationUser)},
	)
	if opts.SuperuserPassword != "" {
		v, err := SCRAMVerifier(opts.SuperuserPassword)
		if err != nil {
			return nil, err
		}
		out = append(out, statement{"set the superuser's password",
			fmt.Sprintf("ALTER ROLE %s WITH PASSWORD %s", quoteIdent(SuperUser), quoteLiteral(v))})
	}
	if opts.Owner != "" {
		v, err := SCRAMVerifier(opts.OwnerPassword)
		if err != nil {
			return nil, err
		}
		out = append(out, statement{"create the owner role",
			fmt.Sprintf("CREATE ROLE %s WITH LOGIN PASSWORD %s", quoteIdent(opts.Owner), quoteLiteral(v))})
	}
	if opts.Database != "" {
		out = append(out, statement{"create the database",
			fmt.Sprintf("CREATE DATABASE %s OWNER %s", quoteIdent(opts.Database), quoteIdent(opts.Owner))})
	}
	return out, nil
}

// moveIntoPlace renames a finished staging directory to the data
// directory, replacing an empty one (a mount point's subdirectory made
// ahead, for instance) but never one with content.
func (i *Instance) moveIntoPlace(staging string) error {
	if err := os.Remove(i.DataDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace the data directory (it must be empty or missing): %w", err)
	}
	if err := os.Rename(staging, i.DataDir); err != nil {
		return fmt.Errorf("move the new data directory into place: %w", err)
	}
	return nil
}
