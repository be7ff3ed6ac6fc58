package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// CloneFrom makes the data directory a copy of the source server, ready to
// start as its standby: pg_basebackup (WAL streamed alongside, so that the
// copy is consistent on its own; a fast checkpoint, so that it starts at
// once) into a staging directory next to the data directory, then the owned
// configuration of a standby of source, then a rename into place. source
// connects as ReplicationUser; its password, if any, reaches pg_basebackup
// in its environment, never on its command line.
func (i *Instance) CloneFrom(ctx context.Context, source ConnInfo) error {
	if err := i.validate(); err != nil {
		return err
	}
	follow, err := followConnInfo(source)
	if err != nil {
		return fmt.Errorf("clone %s: source: %w", i.DataDir, err)
	}
	if i.Initialized() {
		return fmt.Errorf("clone %s from %s: already initialized", i.DataDir, source)
	}
	if err := i.checkEmpty(); err != nil {
		return fmt.Errorf("clone %s: %w", i.DataDir, err)
	}
	staging := i.stagingDir()
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("clone %s: remove the staging directory of a failed attempt: %w", i.DataDir, err)
	}
	if err := i.mkdirOwned(staging); err != nil {
		return fmt.Errorf("clone %s: %w", i.DataDir, err)
	}
	log := i.Log.WithValues("dataDir", i.DataDir, "source", source.String())
	log.Info("Cloning the data directory")
	if err := i.clone(ctx, staging, source, follow); err != nil {
		if rmErr := os.RemoveAll(staging); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove the staging directory: %w", rmErr))
		}
		return fmt.Errorf("clone %s from %s: %w", i.DataDir, source, err)
	}
	if err := i.moveIntoPlace(staging); err != nil {
		return fmt.Errorf("clone %s: %w", i.DataDir, err)
	}
	log.Info("Cloned the data directory")
	return nil
}

func (i *Instance) clone(ctx context.Context, dir string, source, follow ConnInfo) error {
	// pg_basebackup's own application name, not the instance's: its WAL
	// stream must not count as the synchronous standby it is not yet.
	conn := source
	conn.ApplicationName = ""
	if _, err := i.runTool(ctx, "pg_basebackup", passwordEnv(conn),
		"--pgdata", dir,
		"--dbname", conn.String(),
		"--wal-method", "stream",
		"--checkpoint", "fast",
		"--no-password",
		"--label", "clone of "+i.Name,
	); err != nil {
		return err
	}
	if _, err := i.configure(dir, &follow); err != nil {
		return err
	}
	return nil
}

// passwordEnv passes a password to a libpq tool through its environment:
// the command line is visible to every user of the host.
func passwordEnv(c ConnInfo) []string {
	if c.Password == "" {
		return nil
	}
	return []string{"PGPASSWORD=" + c.Password}
}

// followConnInfo is the primary_conninfo of a standby that a clone or a
// rewind from source makes: source without its password, which
// primary_conninfo must not hold; the WAL receiver reads the PassFile.
func followConnInfo(source ConnInfo) (ConnInfo, error) {
	if err := source.validate(); err != nil {
		return ConnInfo{}, err
	}
	if source.Password != "" && source.PassFile == "" {
		return ConnInfo{}, fmt.Errorf("%s has a password but no passfile, which the standby needs to stream: see WritePassFile", source)
	}
	follow := source
	follow.Password = ""
	return follow, nil
}
