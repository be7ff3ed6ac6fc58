package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// recoverySignal makes PostgreSQL start with archive recovery: it replays
// WAL from restore_command up to the recovery target, then, with
// recovery_target_action promote, removes the file and opens as a primary
// on a new timeline.
const recoverySignal = "recovery.signal"

// RecoveryConfigured tells whether the data directory is set up for
// archive recovery (recovery.signal): it is a base backup being recovered,
// never a primary's data until PostgreSQL promotes it.
func (i *Instance) RecoveryConfigured() (bool, error) {
	return exists(filepath.Join(i.DataDir, recoverySignal))
}

// FetchFunc writes a base backup into the directory it is given, which
// does not exist yet.
type FetchFunc func(ctx context.Context, dir string) error

// FetchBaseBackup makes the data directory from a base backup that fetch
// writes, set up for archive recovery (recovery.signal) with the
// instance's Settings, which must carry a Recovery. Like InitDB it builds
// next to the data directory and renames into place, so that a half-made
// one is never mistaken for a real one.
func (i *Instance) FetchBaseBackup(ctx context.Context, fetch FetchFunc) error {
	if err := i.validate(); err != nil {
		return err
	}
	if i.Settings.Recovery == nil {
		return errors.New("fetch a base backup: no recovery settings")
	}
	if err := i.checkEmpty(); err != nil {
		return err
	}
	building := i.DataDir + ".fetching"
	if err := os.RemoveAll(building); err != nil {
		return fmt.Errorf("remove the remains of an earlier fetch: %w", err)
	}
	if err := fetch(ctx, building); err != nil {
		return err
	}
	// A backup taken with -X none carries no WAL; PostgreSQL still needs
	// the folders.
	for _, dir := range []string{"pg_wal", filepath.Join("pg_wal", "archive_status")} {
		if err := os.MkdirAll(filepath.Join(building, dir), 0o700); err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
	}
	if _, err := i.configureRole(building, false, nil); err != nil {
		return err
	}
	if err := i.writeFile(filepath.Join(building, recoverySignal), nil, 0o600); err != nil {
		return err
	}
	if err := i.chownTree(building); err != nil {
		return err
	}
	if err := os.Remove(i.DataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the empty data directory: %w", err)
	}
	if err := os.Rename(building, i.DataDir); err != nil {
		return fmt.Errorf("move the fetched base backup into place: %w", err)
	}
	i.Log.Info("Fetched a base backup for recovery")
	return nil
}

// chownTree gives dir and everything in it to the instance's user: a
// fetched backup is written by the manager, PostgreSQL runs as that user.
func (i *Instance) chownTree(dir string) error {
	if i.Credential == nil || int(i.Credential.Uid) == os.Geteuid() {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return i.chown(path)
	})
}

// WriteFile writes a file the instance's PostgreSQL or its commands read
// (archive_command's configuration), owned by the instance's user, mode
// 0600, whole or not at all.
func (i *Instance) WriteFile(path string, data []byte) error {
	return i.writeFile(path, data, 0o600)
}
