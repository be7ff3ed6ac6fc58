package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
)

// backupLabelFile is what pg_basebackup writes into the copy: where the
// backup starts, which a server started on the copy recovers from.
const backupLabelFile = "backup_label"

// BaseBackup is a copy of a running server's data directory, made with
// pg_basebackup: consistent on its own (its WAL is streamed alongside, and
// pg_verifybackup checks the copy against its manifest), taken from a
// primary or a standby without stopping either. A server started on it
// replays the copied WAL and opens as a primary.
type BaseBackup struct {
	// BinDir holds pg_basebackup and pg_verifybackup.
	BinDir string
	// Source reaches the server to copy, as a role with the replication
	// right; its password reaches pg_basebackup in its environment.
	Source ConnInfo
	// Dir is the data directory to make. Its parent must be writable and
	// on the same file system: the copy is made next to it and renamed into
	// place once checked, so that a half-made copy is never taken for one.
	Dir string
	// Label names the backup in its backup_label.
	Label string
	// Credential is the OS user the tools run as; nil runs them as this
	// process's user.
	Credential *syscall.Credential
	Log        logr.Logger
}

// BackupLabel is where a base backup starts and ends: the WAL position
// and timeline of its starting checkpoint (from its backup_label), the
// position from which it is consistent (from its manifest's WAL range:
// every transaction whose commit record ends there or before is in it),
// and whether it was taken from a standby.
type BackupLabel struct {
	StartLSN    LSN
	EndLSN      LSN
	Timeline    int64
	FromStandby bool
	Label       string
}

// Take makes the copy, or, when Dir holds one already (a retry after the
// copy was made), returns its label: a second copy over a good one would
// only risk it.
func (b BaseBackup) Take(ctx context.Context) (BackupLabel, error) {
	if !filepath.IsAbs(b.Dir) || !filepath.IsAbs(b.BinDir) {
		return BackupLabel{}, fmt.Errorf("base backup: Dir %q and BinDir %q must be absolute paths", b.Dir, b.BinDir)
	}
	if err := b.Source.validate(); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: source: %w", err)
	}
	if label, err := ReadBackupLabel(b.Dir); err == nil {
		b.Log.Info("The base backup was made by an earlier attempt", "dir", b.Dir)
		return label, nil
	}
	if entries, err := os.ReadDir(b.Dir); err == nil && len(entries) > 0 {
		return BackupLabel{}, fmt.Errorf("base backup: %s holds files but no %s: not a backup, and not overwritten", b.Dir, backupLabelFile)
	}
	staging := b.Dir + ".partial"
	if err := os.RemoveAll(staging); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: remove the copy of a failed attempt: %w", err)
	}
	tools := &Instance{Name: "base backup", BinDir: b.BinDir, Credential: b.Credential, Log: b.Log}
	if err := tools.mkdirOwned(staging); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: %w", err)
	}
	conn := b.Source
	log := b.Log.WithValues("dir", b.Dir, "source", conn.String())
	log.Info("Taking a base backup")
	if _, err := tools.runTool(ctx, "pg_basebackup", passwordEnv(conn),
		"--pgdata", staging,
		"--dbname", conn.String(),
		"--wal-method", "stream",
		"--checkpoint", "fast",
		"--no-password",
		"--label", b.Label,
	); err != nil {
		return BackupLabel{}, errors.Join(fmt.Errorf("base backup from %s: %w", conn, err), os.RemoveAll(staging))
	}
	// The manifest lists every file with its checksum, and the WAL from
	// the backup's start to its end must parse: a copy that a network or
	// disk fault cut or changed fails here, not at the restore.
	if _, err := tools.runTool(ctx, "pg_verifybackup", nil, staging); err != nil {
		return BackupLabel{}, errors.Join(fmt.Errorf("verify the base backup from %s: %w", conn, err), os.RemoveAll(staging))
	}
	label, err := ReadBackupLabel(staging)
	if err != nil {
		return BackupLabel{}, errors.Join(err, os.RemoveAll(staging))
	}
	if err := os.Remove(b.Dir); err != nil && !os.IsNotExist(err) {
		return BackupLabel{}, fmt.Errorf("base backup: make room for the copy: %w", err)
	}
	if err := os.Rename(staging, b.Dir); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: move the copy into place: %w", err)
	}
	log.Info("Took a base backup", "startLSN", label.StartLSN.String(), "endLSN", label.EndLSN.String(), "timeline", label.Timeline, "fromStandby", label.FromStandby)
	return label, nil
}

// ReadBackupLabel reads the backup_label and the manifest's WAL range of
// the base backup in dir.
func ReadBackupLabel(dir string) (BackupLabel, error) {
	data, err := os.ReadFile(filepath.Join(dir, backupLabelFile))
	if err != nil {
		return BackupLabel{}, fmt.Errorf("read the backup label: %w", err)
	}
	label, err := ParseBackupLabel(string(data))
	if err != nil {
		return BackupLabel{}, fmt.Errorf("%s: %w", filepath.Join(dir, backupLabelFile), err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, backupManifestFile))
	if err != nil {
		return BackupLabel{}, fmt.Errorf("read the backup manifest: %w", err)
	}
	if label.EndLSN, err = ParseManifestEnd(manifest); err != nil {
		return BackupLabel{}, fmt.Errorf("%s: %w", filepath.Join(dir, backupManifestFile), err)
	}
	return label, nil
}

// backupManifestFile lists a base backup's files with their checksums, and
// the WAL it needs (pg_verifybackup reads it).
const backupManifestFile = "backup_manifest"

// ParseManifestEnd is the end of the WAL a backup manifest says the backup
// needs: the position from which the copy is consistent.
func ParseManifestEnd(manifest []byte) (LSN, error) {
	var m struct {
		WALRanges []struct {
			EndLSN string `json:"End-LSN"`
		} `json:"WAL-Ranges"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return 0, fmt.Errorf("not a backup manifest: %w", err)
	}
	if len(m.WALRanges) == 0 {
		return 0, errors.New("the backup manifest lists no WAL range")
	}
	end, err := ParseLSN(m.WALRanges[len(m.WALRanges)-1].EndLSN)
	if err != nil {
		return 0, fmt.Errorf("End-LSN: %w", err)
	}
	return end, nil
}

// ParseBackupLabel reads what a backup_label says, such as
//
//	START WAL LOCATION: 0/2000028 (file 000000010000000000000002)
//	BACKUP FROM: standby
//	START TIMELINE: 1
//	LABEL: nightly
func ParseBackupLabel(text string) (BackupLabel, error) {
	var label BackupLabel
	var haveLSN, haveTimeline bool
	for _, line := range strings.Split(text, "\n") {
		key, value, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch key {
		case "START WAL LOCATION":
			position, _, _ := strings.Cut(value, " ")
			lsn, err := ParseLSN(position)
			if err != nil {
				return BackupLabel{}, fmt.Errorf("START WAL LOCATION: %w", err)
			}
			label.StartLSN, haveLSN = lsn, true
		case "START TIMELINE":
			tl, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || tl < 1 {
				return BackupLabel{}, fmt.Errorf("START TIMELINE %q is not a timeline", value)
			}
			label.Timeline, haveTimeline = tl, true
		case "BACKUP FROM":
			label.FromStandby = strings.TrimSpace(value) == "standby"
		case "LABEL":
			label.Label = value
		}
	}
	if !haveLSN || !haveTimeline {
		return BackupLabel{}, errors.New("not a backup label: no START WAL LOCATION or START TIMELINE")
	}
	return label, nil
}
