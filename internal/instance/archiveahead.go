package instance

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"example.com/platform-operator/internal/objectstore"
)

// PostgreSQL runs archive_command for one WAL file at a time. When WAL is
// written faster than one upload carries, files wait (.ready in
// pg_wal/archive_status): then wal-archive uploads the next waiting ones
// beside the one it was asked for, and leaves a mark for each that the
// store confirmed, so that PostgreSQL's call for it returns at once. The
// marks live in the socket directory, in memory: a restart forgets them,
// and the files are uploaded again, which the store takes (same content).

// archiveAhead is how many files one wal-archive uploads at most, the one
// asked for included.
const archiveAhead = 4

// archivedMarks is the folder of the marks, beside the configuration.
func archivedMarks(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), "archived")
}

// takeMark tells whether name was uploaded ahead, and removes its mark:
// PostgreSQL marks the file archived once told so, and asks no more.
func takeMark(configPath, name string) bool {
	err := os.Remove(filepath.Join(archivedMarks(configPath), name))
	return err == nil
}

// waitingAfter are the WAL files waiting to be archived after name, in the
// order PostgreSQL would ask for them (segments by name, after it), at
// most n.
func waitingAfter(walPath string, n int) []string {
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(walPath), "archive_status"))
	if err != nil {
		return nil
	}
	name := filepath.Base(walPath)
	var ready []string
	for _, e := range entries {
		if next, ok := strings.CutSuffix(e.Name(), ".ready"); ok && next > name && objectstore.IsSegment(next) {
			ready = append(ready, next)
		}
	}
	sort.Strings(ready)
	return ready[:min(n, len(ready))]
}

// archiveWithAhead archives walPath and, alongside, the files waiting after
// it; it returns walPath's result alone. A file uploaded ahead that fails
// is simply asked for again by PostgreSQL.
func archiveWithAhead(ctx context.Context, store *objectstore.Client, configPath, walPath string) error {
	ahead := waitingAfter(walPath, archiveAhead-1)
	if len(ahead) == 0 {
		return store.ArchiveWAL(ctx, walPath)
	}
	marks := archivedMarks(configPath)
	if err := os.MkdirAll(marks, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return store.ArchiveWAL(ctx, walPath)
	}
	var wg sync.WaitGroup
	for _, name := range ahead {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if store.ArchiveWAL(ctx, filepath.Join(filepath.Dir(walPath), name)) == nil {
				_ = os.WriteFile(filepath.Join(marks, name), nil, 0o600)
			}
		}()
	}
	err := store.ArchiveWAL(ctx, walPath)
	wg.Wait()
	return err
}
