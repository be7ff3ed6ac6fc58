package objectstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// ArchiveWAL stores the WAL file at path (archive_command's %p), and
// returns only once the store confirmed it. A file already archived with
// the same content is success (PostgreSQL archives a file again after a
// crash); with other content it is an error, so that one cluster's
// archive never overwrites another's history.
func (c *Client) ArchiveWAL(ctx context.Context, path string) error {
	name := filepath.Base(path)
	object, err := walObject(name)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the WAL file to archive: %w", err)
	}
	data, object := raw, object
	if c.loc.Compress {
		if data, err = compress(raw); err != nil {
			return fmt.Errorf("compress %s: %w", name, err)
		}
		object += gzSuffix
	}
	same, err := c.holds(ctx, object, data)
	switch {
	case err == nil && same:
		return nil
	case err == nil:
		return fmt.Errorf("%s is in %s already, with other content: another cluster archives to this path, or this one's history forked from it", name, c.loc)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	return c.put(ctx, object, data)
}

// holds tells whether the object at name has data's content, by its digest
// (put writes one), else by reading it; ErrNotFound when there is none.
// Every standby archives what the primary archived too: asking costs one
// request, not a download.
func (c *Client) holds(ctx context.Context, name string, data []byte) (bool, error) {
	headCtx, cancel := withTimeout(ctx)
	defer cancel()
	s, err := c.head(headCtx, name)
	switch {
	case err != nil:
		return false, err
	case s.size != int64(len(data)):
		return false, nil
	case s.digest != "":
		return s.digest == digest(data), nil
	}
	existing, err := c.getAll(ctx, name)
	if err != nil {
		return false, err
	}
	return bytes.Equal(existing, data), nil
}

// RestoreWAL writes the archived WAL file name to dest (restore_command's
// %f and %p); ErrNotFound when the archive does not hold it, which ends
// recovery's reading of the archive.
func (c *Client) RestoreWAL(ctx context.Context, name, dest string) error {
	data, err := c.readWAL(ctx, name)
	if err != nil {
		return err
	}
	tmp := dest + ".restoring"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// ArchiveEmpty tells whether the location holds no WAL yet: a cluster
// archives only into an empty path, never onto another's archive (two
// clusters on one path, or a restored cluster on its source's).
func (c *Client) ArchiveEmpty(ctx context.Context) (bool, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	objects, err := c.list(ctx, walDir, 1)
	if err != nil {
		return false, err
	}
	return len(objects) == 0, nil
}

// ArchivedWAL lists the names of the WAL files archived, sorted.
func (c *Client) ArchivedWAL(ctx context.Context) ([]string, error) {
	objects, err := c.list(ctx, walDir, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objects {
		if n := walFileOf(o.Name); n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// compress gzips data with no name or time in the header, so that the
// same WAL file compresses to the same bytes each time.
func compress(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decompress(data []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
