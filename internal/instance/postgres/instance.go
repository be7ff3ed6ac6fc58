package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
)

// Files of the data directory that this package reads or writes.
const (
	ownedConfFile   = "operator.conf"
	mainConfFile    = "postgresql.conf"
	hbaFile         = "pg_hba.conf"
	standbySignal   = "standby.signal"
	versionFile     = "PG_VERSION"
	includeOwnedCfg = "include '" + ownedConfFile + "'"
)

// Instance is one PostgreSQL instance on this host: where its binaries and
// files are, where it listens, and who it runs as. Set the fields, then call
// its methods; an Instance is not safe for concurrent use.
type Instance struct {
	// Name is the instance's name, its application_name when it streams
	// from a primary (what synchronous_standby_names lists).
	Name string
	// BinDir holds postgres, initdb, pg_ctl, pg_basebackup, pg_rewind and
	// pg_controldata.
	BinDir string
	// DataDir is the data directory. Its parent must be writable by this
	// process, on the same file system: InitDB and CloneFrom build the data
	// directory next to it and rename it into place, so that a half-made
	// one is never mistaken for a real one.
	DataDir string
	// SocketDir is the directory of the Unix socket, made 0700 and owned by
	// the instance's user: the socket is trusted (see RenderHBA).
	SocketDir string
	// ListenAddress is where PostgreSQL listens for TCP connections: an
	// address, "*", or empty for the socket only.
	ListenAddress string
	Port          int
	// Credential is the OS user postgres and the tools run as; nil runs
	// them as this process's user. PostgreSQL refuses to run as root.
	Credential *syscall.Credential
	// Settings are the operator's settings, written by ConfigurePrimary and
	// ConfigureStandby.
	Settings Settings
	// Output receives postgres's log (its stderr); nil logs each line
	// through Log.
	Output io.Writer
	Log    logr.Logger
}

// validate checks what every operation needs.
func (i *Instance) validate() error {
	var errs []error
	if i.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	for _, d := range [][2]string{{"BinDir", i.BinDir}, {"DataDir", i.DataDir}, {"SocketDir", i.SocketDir}} {
		if !filepath.IsAbs(d[1]) {
			errs = append(errs, fmt.Errorf("%s %q is not an absolute path", d[0], d[1]))
		}
	}
	if i.Port < 1 || i.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is out of range", i.Port))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("instance %q: %w", i.Name, err)
	}
	return nil
}

func (i *Instance) bin(name string) string {
	return filepath.Join(i.BinDir, name)
}

// Initialized tells whether the data directory holds a database cluster.
// InitDB and CloneFrom make it appear whole, by a rename, so a data
// directory with PG_VERSION is complete.
func (i *Instance) Initialized() bool {
	_, err := os.Stat(filepath.Join(i.DataDir, versionFile))
	return err == nil
}

// StandbyConfigured tells whether the data directory is set up to start as
// a standby (standby.signal). With ControlData, it tells a former primary
// (no signal, a cluster state out of recovery) from a standby.
func (i *Instance) StandbyConfigured() (bool, error) {
	return exists(filepath.Join(i.DataDir, standbySignal))
}

// RanAsPrimary tells whether the data directory was last used by a primary:
// its control data is out of recovery (running, crashed or shut down as a
// primary) and it is not configured as a standby. The instance manager must
// not start such a data directory unless it holds the primary's lease: a
// former primary rejoins only through Rewind, which makes it a standby.
func (i *Instance) RanAsPrimary(ctx context.Context) (bool, error) {
	standby, err := i.StandbyConfigured()
	if err != nil {
		return false, err
	}
	if standby {
		return false, nil
	}
	// A base backup being recovered holds the control data of the
	// running primary it was copied from.
	if recovering, err := i.RecoveryConfigured(); err != nil || recovering {
		return false, err
	}
	cd, err := i.ControlData(ctx)
	if err != nil {
		return false, err
	}
	return !cd.InRecoveryState(), nil
}

// checkEmpty fails unless the data directory is missing or empty: InitDB
// and CloneFrom never replace data.
func (i *Instance) checkEmpty() error {
	entries, err := os.ReadDir(i.DataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the data directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty", i.DataDir)
	}
	return nil
}

// stagingDir is where InitDB and CloneFrom build a data directory before
// renaming it into place: next to it, hidden, on the same file system.
func (i *Instance) stagingDir() string {
	return filepath.Join(filepath.Dir(i.DataDir), "."+filepath.Base(i.DataDir)+".staging")
}

// chown gives path to the instance's user, when this process runs as
// another one (root, in tests and in containers that start as root).
func (i *Instance) chown(path string) error {
	if i.Credential == nil || int(i.Credential.Uid) == os.Geteuid() {
		return nil
	}
	if err := os.Lchown(path, int(i.Credential.Uid), int(i.Credential.Gid)); err != nil {
		return fmt.Errorf("give %s to uid %d: %w", path, i.Credential.Uid, err)
	}
	return nil
}

// mkdirOwned makes dir (if missing) with mode 0700, owned by the instance's
// user, and makes sure of both if it exists: PostgreSQL refuses a data
// directory others can read, and the trusted socket relies on it.
func (i *Instance) mkdirOwned(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make directory %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make directory %s private: %w", dir, err)
	}
	return i.chown(dir)
}

// writeFile replaces path with data atomically (a temporary file renamed
// over it), owned by the instance's user, so that postgres never reads half
// a file.
func (i *Instance) writeFile(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := i.chown(tmp.Name()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("look for %s: %w", path, err)
}
