package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWaitingAfter(t *testing.T) {
	wal := filepath.Join(t.TempDir(), "pg_wal")
	status := filepath.Join(wal, "archive_status")
	if err := os.MkdirAll(status, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		"000000010000000000000001.done", "000000010000000000000002.ready", "000000010000000000000005.ready",
		"000000010000000000000003.ready", "000000010000000000000004.ready", "00000002.history.ready", "000000010000000000000006.ready",
	} {
		if err := os.WriteFile(filepath.Join(status, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := waitingAfter(filepath.Join(wal, "000000010000000000000002"), 3)
	if want := "000000010000000000000003 000000010000000000000004 000000010000000000000005"; strings.Join(got, " ") != want {
		t.Errorf("waitingAfter = %v, want %s: the next segments waiting, in order, at most 3, not the one asked for nor history files", got, want)
	}
	if got := waitingAfter(filepath.Join(wal, "000000010000000000000006"), 3); len(got) != 0 {
		t.Errorf("nothing waits after the last one, got %v", got)
	}
}

func TestMarksAreTakenOnce(t *testing.T) {
	config := filepath.Join(t.TempDir(), archiveConfigFile)
	if err := os.MkdirAll(archivedMarks(config), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(archivedMarks(config), "000000010000000000000003"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !takeMark(config, "000000010000000000000003") {
		t.Error("a file uploaded ahead is not taken as archived")
	}
	if takeMark(config, "000000010000000000000003") {
		t.Error("a mark counts twice")
	}
	if takeMark(config, "000000010000000000000004") {
		t.Error("a file without a mark is taken as archived")
	}
}
