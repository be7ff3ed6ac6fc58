package objectstore

import (
	"strings"
	"testing"
	"time"
)

func TestPlanRetention(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 12, d, 3, 0, 0, 0, time.UTC) }
	// Backups start at segments 2, 5 and 9 of timeline 1.
	backups := []BackupInfo{
		{ID: "b1", EndedAt: day(1), StartLSN: "2"},
		{ID: "b2", EndedAt: day(3), StartLSN: "5"},
		{ID: "b3", EndedAt: day(5), StartLSN: "9"},
	}
	segmentOf := func(b BackupInfo) (uint64, bool) {
		n := map[string]uint64{"2": 2, "5": 5, "9": 9}[b.StartLSN]
		return n, n > 0
	}
	wal := []string{
		"000000010000000000000001", "000000010000000000000002", "000000010000000000000004", "000000010000000000000005",
		"00000002.history", "000000020000000000000006", "000000020000000000000009", "00000002000000000000000A",
	}
	ids := func(bs []BackupInfo) string {
		var s []string
		for _, b := range bs {
			s = append(s, b.ID)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name        string
		backups     []BackupInfo
		holds       []Hold
		window      time.Duration
		now         time.Time
		wantBackups string
		wantWAL     string
		wantHolds   string
	}{
		{"a window back to between b2 and b3 keeps b2 on, and its WAL", backups, nil, 3 * 24 * time.Hour, day(7), "b1",
			"000000010000000000000001,000000010000000000000002,000000010000000000000004", ""},
		{"a window that reaches before b1 keeps every backup; WAL before the oldest serves none", backups, nil, 30 * 24 * time.Hour, day(7), "", "000000010000000000000001", ""},
		{"a window shorter than the time since b3: b3 and the WAL after it stay, never less",
			backups, nil, time.Hour, day(7), "b1,b2",
			"000000010000000000000001,000000010000000000000002,000000010000000000000004,000000010000000000000005,000000020000000000000006", ""},
		{"no backup: nothing goes", nil, nil, time.Hour, day(7), "", "", ""},
		{"a restore holding b1 keeps it and the WAL from it on", backups, []Hold{{Key: "uid-r", Backup: "b1", Until: day(8)}},
			3 * 24 * time.Hour, day(7), "", "000000010000000000000001", ""},
		{"a restore holding b2 keeps b2 on, b1 goes", backups, []Hold{{Key: "uid-r", Backup: "b2", Until: day(8)}},
			time.Hour, day(7), "b1", "000000010000000000000001,000000010000000000000002,000000010000000000000004", ""},
		{"a lapsed hold holds nothing, and is let go", backups, []Hold{{Key: "uid-r", Backup: "b1", Until: day(7)}},
			3 * 24 * time.Hour, day(7), "b1", "000000010000000000000001,000000010000000000000002,000000010000000000000004", "uid-r"},
		{"of two holds only the lapsed one goes, the other still holds", backups,
			[]Hold{{Key: "uid-old", Backup: "b2", Until: day(6)}, {Key: "uid-new", Backup: "b1", Until: day(8)}},
			time.Hour, day(7), "", "000000010000000000000001", "uid-old"},
		{"a hold of a backup gone holds nothing", backups, []Hold{{Key: "uid-r", Backup: "b0", Until: day(8)}},
			3 * 24 * time.Hour, day(7), "b1", "000000010000000000000001,000000010000000000000002,000000010000000000000004", ""},
	}
	for _, tc := range tests {
		plan := PlanRetention(tc.backups, wal, tc.holds, tc.window, tc.now, segmentOf)
		if got := ids(plan.Backups); got != tc.wantBackups {
			t.Errorf("%s: backups deleted %q, want %q", tc.name, got, tc.wantBackups)
		}
		if got := strings.Join(plan.WAL, ","); got != tc.wantWAL {
			t.Errorf("%s: WAL deleted %q, want %q", tc.name, got, tc.wantWAL)
		}
		for _, w := range plan.WAL {
			if strings.HasSuffix(w, ".history") {
				t.Errorf("%s: a history file is deleted", tc.name)
			}
		}
		if got := strings.Join(plan.Holds, ","); got != tc.wantHolds {
			t.Errorf("%s: holds let go %q, want %q", tc.name, got, tc.wantHolds)
		}
	}
}

func TestStartSegment(t *testing.T) {
	lsn := func(string) (uint64, error) { return 0x1_05000028, nil }
	got, ok := StartSegment(BackupInfo{}, lsn, 16<<20)
	if !ok || got != 1<<32|5 {
		t.Errorf("StartSegment = %x, %v; want log 1 segment 5", got, ok)
	}
	if n, _ := segmentNumber("000000030000000100000005"); n != got {
		t.Errorf("segmentNumber of the same segment on another timeline = %x, want %x", n, got)
	}
}
