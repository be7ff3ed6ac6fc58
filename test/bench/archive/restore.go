package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"

	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
)

// restoreTimeout bounds each step of the restore phase.
const restoreTimeout = 20 * time.Minute

const gib = 1 << 30

// restore takes a base backup of the server into the store, then times
// FetchBaseBackup of it into an empty folder, and pg_basebackup -X fetch
// of the same server into another, with and without its fsync.
func (b *bench) restore(ctx context.Context, conn *pgx.Conn) (Restore, error) {
	var r Restore
	if err := conn.QueryRow(ctx, "SELECT sum(pg_database_size(oid))::bigint FROM pg_database").Scan(&r.DatabaseBytes); err != nil {
		return r, err
	}
	// Each copy starts with its own fast checkpoint: one done now leaves
	// them little to write.
	checkpoint := func() error { _, err := conn.Exec(ctx, "CHECKPOINT"); return err }
	if err := checkpoint(); err != nil {
		return r, err
	}

	label := "bench-" + time.Now().UTC().Format("20060102-150405")
	logf("Base backup %s into the store (instance basebackup-to-store's code)", label)
	stepCtx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	start := time.Now()
	result, err := instance.TakeStoreBackup(stepCtx, instance.StoreBackupOptions{
		Host: b.pg.ListenAddress, Port: b.pg.Port, User: postgres.BackupUser, Label: label, Cluster: "bench", Namespace: "bench",
		BinDir: b.cfg.pgBinDir, Password: b.backupP, Location: b.loc,
	}, time.Now, logr.Discard())
	if err != nil {
		return r, err
	}
	r.BaseBackup = Timing{Seconds: round3(time.Since(start).Seconds()), Bytes: result.Size}
	store, err := objectstore.New(b.loc)
	if err != nil {
		return r, err
	}
	backups, err := store.ListBaseBackups(stepCtx)
	if err != nil {
		return r, err
	}
	var info *objectstore.BackupInfo
	for i := range backups {
		if backups[i].ID == label {
			info = &backups[i]
		}
	}
	if info == nil {
		return r, fmt.Errorf("base backup %s is not in the store's list", label)
	}
	if r.StoredBytes, err = b.storedBytes(stepCtx, archivePath+"/base/"+label, nil); err != nil {
		return r, err
	}
	logf("  %.1f s, %d MiB of tar, %d MiB stored", r.BaseBackup.Seconds, result.Size>>20, r.StoredBytes>>20)

	// The parts of a fetch, each alone: the download, then the download
	// and gunzip, both into nothing.
	for _, part := range []struct {
		into   *Timing
		gunzip bool
	}{{&r.Download, false}, {&r.DownloadGunzip, true}} {
		if *part.into, err = b.readBackup(stepCtx, *info, part.gunzip); err != nil {
			return r, err
		}
	}
	logf("  download alone %.1f s, download and gunzip %.1f s", r.Download.Seconds, r.DownloadGunzip.Seconds)

	logf("FetchBaseBackup into an empty folder")
	dir := filepath.Join(b.dir, "restore-store")
	start = time.Now()
	if err := store.FetchBaseBackup(stepCtx, *info, dir); err != nil {
		return r, err
	}
	if r.Fetch, err = timed(start, dir); err != nil {
		return r, err
	}
	logf("  %.1f s, %d MiB: %.1f s/GiB", r.Fetch.Seconds, r.Fetch.Bytes>>20, r.Fetch.SecondsPerGiB)

	for _, run := range []struct {
		into *Timing
		args []string
	}{{&r.PgBasebackup, nil}, {&r.PgBasebackupNoSync, []string{"--no-sync"}}} {
		if err := checkpoint(); err != nil {
			return r, err
		}
		dir := filepath.Join(b.dir, "restore-pg_basebackup")
		args := append([]string{"-D", dir, "-X", "fetch", "--checkpoint=fast", "-h", b.pg.ListenAddress, "-p", strconv.Itoa(b.pg.Port),
			"-U", postgres.BackupUser, "--no-password"}, run.args...)
		logf("pg_basebackup %v", args[1:])
		cmd := exec.CommandContext(stepCtx, filepath.Join(b.cfg.pgBinDir, "pg_basebackup"), args...)
		cmd.Env = []string{"PGPASSWORD=" + b.backupP, "LC_ALL=C"}
		cmd.WaitDelay = 10 * time.Second
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return r, fmt.Errorf("pg_basebackup: %w: %s", err, out)
		}
		t, err := timed(start, dir)
		if err != nil {
			return r, err
		}
		*run.into = t
		logf("  %.1f s, %d MiB: %.1f s/GiB", t.Seconds, t.Bytes>>20, t.SecondsPerGiB)
	}
	if r.PgBasebackup.SecondsPerGiB > 0 {
		r.FetchOverPgBasebackup = round3(r.Fetch.SecondsPerGiB / r.PgBasebackup.SecondsPerGiB)
	}
	if r.PgBasebackupNoSync.SecondsPerGiB > 0 {
		r.FetchOverPgBasebackupNoSync = round3(r.Fetch.SecondsPerGiB / r.PgBasebackupNoSync.SecondsPerGiB)
	}
	return r, nil
}

// readBackup times reading the data of base backup info from the store
// with a raw GetObject into nothing, gunzipped or not.
func (b *bench) readBackup(ctx context.Context, info objectstore.BackupInfo, gunzip bool) (Timing, error) {
	key := archivePath + "/base/" + info.ID + "/data.tar"
	if info.Compressed {
		key += ".gz"
	}
	start := time.Now()
	out, err := b.rawClient().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return Timing{}, fmt.Errorf("read %s: %w", key, err)
	}
	defer out.Body.Close()
	var r io.Reader = out.Body
	if gunzip && info.Compressed {
		zr, err := gzip.NewReader(out.Body)
		if err != nil {
			return Timing{}, err
		}
		r = zr
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return Timing{}, fmt.Errorf("read %s: %w", key, err)
	}
	secs := time.Since(start).Seconds()
	return Timing{Seconds: round3(secs), Bytes: n, SecondsPerGiB: round3(secs / (float64(n) / gib))}, nil
}

// timed is the time since start of a copy into dir, the bytes of the
// files it holds, and the seconds per GiB of them; it removes dir, so
// that the next copy writes into as empty a disk.
func timed(start time.Time, dir string) (Timing, error) {
	secs := time.Since(start).Seconds()
	var size int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		}
		return nil
	})
	if err != nil {
		return Timing{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return Timing{}, err
	}
	t := Timing{Seconds: round3(secs), Bytes: size}
	if size > 0 {
		t.SecondsPerGiB = round3(secs / (float64(size) / gib))
	}
	return t, nil
}
