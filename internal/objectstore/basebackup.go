package objectstore

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BackupInfo is the record of a base backup in the store, written after
// its data: a backup without one is incomplete and never restored.
type BackupInfo struct {
	// ID names the backup, unique in the location.
	ID string `json:"id"`
	// Cluster and Namespace are those of the PostgresCluster backed up.
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// StartLSN and EndLSN are where the backup's WAL starts and where the
	// copy is consistent; Timeline the timeline of both.
	StartLSN string `json:"startLSN"`
	EndLSN   string `json:"endLSN"`
	Timeline int64  `json:"timeline"`
	// StartedAt and EndedAt bound the copy: a recovery target time from
	// EndedAt on can start from it.
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt"`
	// Compressed says whether the data is gzipped.
	Compressed bool `json:"compressed"`
}

// PutBaseBackup stores the tar stream of a data directory as backup
// info.ID, then its record: what ListBaseBackups finds is whole.
func (c *Client) PutBaseBackup(ctx context.Context, data io.Reader, info BackupInfo) error {
	compressed, err := c.PutBaseBackupData(ctx, info.ID, data)
	if err != nil {
		return err
	}
	info.Compressed = compressed
	return c.PutBackupRecord(ctx, info)
}

// PutBaseBackupData stores the tar stream of base backup id without its
// record, and says whether it is stored compressed, for the record. It is
// for a writer that learns what the record says only once the stream is
// over (where a pg_basebackup's WAL ends is in the stream's last file):
// PutBackupRecord then makes the backup whole. Until then no listing
// finds it; a reader error aborts the upload.
func (c *Client) PutBaseBackupData(ctx context.Context, id string, data io.Reader) (bool, error) {
	if !backupID.MatchString(id) {
		return false, fmt.Errorf("base backup ID %q: lower case letters, digits, '-' and '.' only", id)
	}
	compressed := c.loc.Compress
	body := data
	if compressed {
		pr, pw := io.Pipe()
		go func() {
			zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
			_, err := io.Copy(zw, data)
			if err == nil {
				err = zw.Close()
			}
			pw.CloseWithError(err)
		}()
		body = pr
		defer pr.Close()
	}
	if err := c.putStream(ctx, backupData(id, compressed), body); err != nil {
		return false, err
	}
	return compressed, nil
}

// PutBackupRecord writes the record of a base backup whose data is
// stored.
func (c *Client) PutBackupRecord(ctx context.Context, info BackupInfo) error {
	record, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the record of base backup %s: %w", info.ID, err)
	}
	return c.put(ctx, backupRecord(info.ID), record)
}

// ListBaseBackups are the whole base backups of the location, oldest
// first.
func (c *Client) ListBaseBackups(ctx context.Context) ([]BackupInfo, error) {
	objects, err := c.list(ctx, baseDir, 0)
	if err != nil {
		return nil, err
	}
	var backups []BackupInfo
	for _, o := range objects {
		if !strings.HasSuffix(o.Name, "/backup.json") {
			continue
		}
		data, err := c.getAll(ctx, o.Name)
		if err != nil {
			return nil, err
		}
		var info BackupInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return nil, fmt.Errorf("read the record %s: %w", o.Name, err)
		}
		backups = append(backups, info)
	}
	sort.Slice(backups, func(i, j int) bool { return backups[i].EndedAt.Before(backups[j].EndedAt) })
	return backups, nil
}

// DeleteBaseBackup deletes backup id: its record first, so that it is
// never found half deleted.
func (c *Client) DeleteBaseBackup(ctx context.Context, info BackupInfo) error {
	if err := c.remove(ctx, []string{backupRecord(info.ID)}); err != nil {
		return err
	}
	return c.remove(ctx, []string{backupData(info.ID, info.Compressed)})
}

// FetchBaseBackup extracts base backup info into dir, which must not
// exist: a data directory to start recovery from.
func (c *Client) FetchBaseBackup(ctx context.Context, info BackupInfo, dir string) error {
	body, err := c.get(ctx, backupData(info.ID, info.Compressed))
	if err != nil {
		return err
	}
	defer body.Close()
	var r io.Reader = body
	if info.Compressed {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return fmt.Errorf("base backup %s: %w", info.ID, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("make %s for base backup %s: %w", dir, info.ID, err)
	}
	if err := extractTar(r, dir); err != nil {
		return fmt.Errorf("extract base backup %s: %w", info.ID, err)
	}
	return nil
}

// extractTar writes the directories and regular files of a tar stream
// under dir, refusing any name that leaves it.
func extractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%q leaves the data directory", h.Name)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o600|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: a tar entry of type %q, which a data directory of this layout never holds", h.Name, string(h.Typeflag))
		}
	}
}
