package objectstore

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWALObject(t *testing.T) {
	tests := []struct{ name, want, err string }{
		{"000000010000000000000003", "wals/0000000100000000/000000010000000000000003", ""},
		{"00000002.history", "wals/00000002.history", ""},
		{"000000010000000000000003.partial", "wals/0000000100000000/000000010000000000000003.partial", ""},
		{"000000010000000000000003.00000028.backup", "wals/0000000100000000/000000010000000000000003.00000028.backup", ""},
		{"../../etc/passwd", "", "not the name"},
		{"00000001000000000000000g", "", "not the name"},
	}
	for _, tc := range tests {
		got, err := walObject(tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("walObject(%q) = %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("walObject(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if back := walFileOf(got + gzSuffix); back != tc.name {
			t.Errorf("walFileOf(%q) = %q, want %q", got+gzSuffix, back, tc.name)
		}
	}
	if n := walFileOf("base/x/backup.json"); n != "" {
		t.Errorf("a base backup's record is not WAL, got %q", n)
	}
}

func TestSegmentName(t *testing.T) {
	const seg = 16 << 20
	if got := SegmentName(1, 0x1FF, seg); got != "0000000100000001000000FF" {
		t.Errorf("SegmentName = %s", got)
	}
	got := SegmentsBetween(2, 0xFF*seg+5, 0x100*seg+5, seg)
	want := []string{"0000000200000000000000FF", "000000020000000100000000"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("SegmentsBetween = %v, want %v", got, want)
	}
}

func TestChooseBaseBackup(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 12, 7, h, 0, 0, 0, time.UTC) }
	backups := []BackupInfo{
		{ID: "a", EndedAt: at(1), EndLSN: "0/1000000"},
		{ID: "b", EndedAt: at(3), EndLSN: "0/3000000"},
		{ID: "c", EndedAt: at(5), EndLSN: "0/5000000"},
	}
	lsn := func(s string) uint64 {
		return map[string]uint64{"0/1000000": 0x1000000, "0/3000000": 0x3000000, "0/5000000": 0x5000000}[s]
	}
	ptr := func(t time.Time) *time.Time { return &t }
	tests := []struct {
		name   string
		target Target
		want   string
		err    string
	}{
		{"no target: the newest", Target{}, "c", ""},
		{"a time: the newest consistent before it", Target{Time: ptr(at(4))}, "b", ""},
		{"a time a backup ended at: that backup", Target{Time: ptr(at(3))}, "b", ""},
		{"a time before every backup: refused", Target{Time: ptr(at(0))}, "", "before the oldest base backup"},
		{"an LSN", Target{LSN: 0x4000000}, "b", ""},
		{"an LSN before every backup", Target{LSN: 0x10}, "", "before the oldest base backup"},
		{"a restore point: the oldest, from which any later point is reached", Target{Name: "before-upgrade"}, "a", ""},
		{"a backup named: that one, though newer ones exist", Target{Backup: "a"}, "a", ""},
		{"a backup named and a later time: that one", Target{Backup: "b", Time: ptr(at(4))}, "b", ""},
		{"a backup named and a restore point: that one", Target{Backup: "b", Name: "before-upgrade"}, "b", ""},
		{"a backup named, consistent after the time: refused", Target{Backup: "c", Time: ptr(at(4))}, "", "targetTime 2026-12-07T04:00:00Z is before base backup c was consistent"},
		{"a backup named, consistent after the LSN: refused", Target{Backup: "c", LSN: 0x4000000}, "", "targetLSN is before base backup c was consistent"},
		{"a backup the store lacks: refused, naming the field and those it has", Target{Backup: "z"}, "", "spec.bootstrap.fromBackup.name: the object store holds no base backup z (it holds: a, b, c)"},
	}
	for _, tc := range tests {
		got, err := ChooseBaseBackup(backups, tc.target, lsn)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %s, %v; want an error with %q", tc.name, got.ID, err, tc.err)
			}
			continue
		}
		if err != nil || got.ID != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got.ID, err, tc.want)
		}
	}
	if _, err := ChooseBaseBackup(nil, Target{}, lsn); err == nil || !strings.Contains(err.Error(), "no base backup") {
		t.Errorf("no backups: %v", err)
	}
}

func tarOf(t *testing.T, entries map[string]string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for name, content := range entries {
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestExtractTar(t *testing.T) {
	dir := t.TempDir()
	if err := extractTar(tarOf(t, map[string]string{"PG_VERSION": "15\n", "global/pg_control": "x"}), dir); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "global", "pg_control")); err != nil || string(data) != "x" {
		t.Errorf("extracted %q, %v", data, err)
	}
	err := extractTar(tarOf(t, map[string]string{"../outside": "x"}), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "leaves the data directory") {
		t.Errorf("a name that leaves the directory: %v", err)
	}
}

func TestLocationValidate(t *testing.T) {
	err := Location{Endpoint: "s3.example.com", Prefix: "/x"}.Validate()
	for _, want := range []string{"not an http:// or https:// URL", "bucket is empty", "starts or ends with a slash", "access key"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err := (Location{Endpoint: "https://s3.example.com", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}).Validate(); err != nil {
		t.Errorf("a whole location: %v", err)
	}
}

func TestCompressIsDeterministic(t *testing.T) {
	a, err := compress([]byte("the same WAL"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := compress([]byte("the same WAL"))
	if !bytes.Equal(a, b) {
		t.Error("one WAL file compressed twice differs: archiving it again would look like another cluster's")
	}
	if back, err := decompress(a); err != nil || string(back) != "the same WAL" {
		t.Errorf("decompress = %q, %v", back, err)
	}
}

// A recovery follows the archive's latest timeline; a base backup off its
// history is left out, and refused when named or when none is left.
func TestOnLatestTimeline(t *testing.T) {
	lsn := func(s string) (uint64, error) {
		var hi, lo uint32
		_, err := fmt.Sscanf(s, "%X/%X", &hi, &lo)
		return uint64(hi)<<32 | uint64(lo), err
	}
	lsnOf := func(s string) uint64 { v, _ := lsn(s); return v }
	parse := func(text string) []TimelineSwitch {
		h, err := ParseHistory([]byte(text), lsn)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Timeline 2 left 1 at 0/5000000; timeline 3 left 2 at 0/9000000.
	forked := Histories{
		2: parse("1\t0/5000000\tno recovery target specified\n"),
		3: parse("# comment\n1\t0/5000000\tno recovery target specified\n\n2\t0/9000000\tno recovery target specified\n"),
	}
	// Timeline 2 left 1 at 0/5000000; timeline 3 was restored from 1 at
	// 0/3000000, beside 2: 2 is not on its history.
	sideways := Histories{
		2: parse("1\t0/5000000\tx\n"),
		3: parse("1\t0/3000000\tbefore-upgrade\n"),
	}
	b := func(id string, tl int64, end string) BackupInfo { return BackupInfo{ID: id, Timeline: tl, EndLSN: end} }
	ids := func(bs []BackupInfo) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	tests := []struct {
		name      string
		histories Histories
		backups   []BackupInfo
		target    Target
		want      []string
		err       string
	}{
		{"one timeline: all", Histories{}, []BackupInfo{b("a", 1, "0/2000000"), b("b", 1, "0/8000000")}, Target{}, []string{"a", "b"}, ""},
		{"ancestors before their switch: kept", forked, []BackupInfo{b("a", 1, "0/2000000"), b("b", 2, "0/8000000"), b("c", 3, "0/A000000")}, Target{}, []string{"a", "b", "c"}, ""},
		{"an ancestor's backup consistent after the switch: left out", forked, []BackupInfo{b("a", 1, "0/2000000"), b("late", 1, "0/6000000")}, Target{}, []string{"a"}, ""},
		{"a backup on a timeline beside the latest: left out", sideways, []BackupInfo{b("a", 1, "0/2000000"), b("side", 2, "0/8000000")}, Target{}, []string{"a"}, ""},
		{"that backup named: refused, naming the field and the history", sideways, []BackupInfo{b("a", 1, "0/2000000"), b("side", 2, "0/8000000")}, Target{Backup: "side"}, nil,
			"spec.bootstrap.fromBackup.name: base backup side is on timeline 2 up to 0/8000000, and the archive's latest timeline 3 does not descend from it there (its history: timeline 1 until 0/3000000)"},
		{"none on the latest timeline's history: refused", sideways, []BackupInfo{b("late", 1, "0/4000000"), b("side", 2, "0/8000000")}, Target{}, nil,
			"spec.bootstrap.fromBackup: no base backup lies on the history of the timeline the recovery follows"},
		{"a gap in the history files: the latest is before it", Histories{2: parse("1\t0/5000000\tx\n"), 4: parse("1\t0/5000000\tx\n2\t0/6000000\tx\n3\t0/7000000\tx\n")},
			[]BackupInfo{b("a", 1, "0/2000000"), b("b", 2, "0/8000000")}, Target{}, []string{"a", "b"}, ""},
	}
	for _, tc := range tests {
		got, err := tc.histories.OnLatestTimeline(tc.backups, tc.target, lsnOf)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, %v; want an error with %q", tc.name, ids(got), err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(ids(got), ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: got %v, %v; want %v", tc.name, ids(got), err, tc.want)
		}
	}
	if _, err := ParseHistory([]byte("1\n"), lsn); err == nil {
		t.Error("a history line without a switch point parsed")
	}
}

// What a recovery along the latest timeline needs of the archive: every
// segment from the first archived, on each timeline of its history up to
// the segment where the next one took over, and each history file.
func TestContinuityBreaks(t *testing.T) {
	const seg = 16 << 20
	lsn := func(s string) (uint64, error) {
		var hi, lo uint32
		_, err := fmt.Sscanf(s, "%X/%X", &hi, &lo)
		return uint64(hi)<<32 | uint64(lo), err
	}
	history := func(text string) []TimelineSwitch {
		h, err := ParseHistory([]byte(text), lsn)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Timeline 2 left 1 in segment 5 (0/5000100); 3 left 2 in segment 8.
	both := Histories{2: history("1\t0/5000100\tx\n"), 3: history("1\t0/5000100\tx\n2\t0/8000200\tx\n")}
	names := func(list string) []string { return strings.Fields(list) }
	whole := "000000010000000000000002 000000010000000000000003 000000010000000000000004 000000010000000000000005.partial " +
		"000000020000000000000005 000000020000000000000006 000000020000000000000007 00000002.history " +
		"000000030000000000000008 000000030000000000000009 00000003.history"
	tests := []struct {
		name      string
		names     string
		histories Histories
		want      []string
	}{
		{"whole", whole, both, nil},
		{"one timeline, a gap", "000000010000000000000002 000000010000000000000004", Histories{}, []string{"missing 000000010000000000000003"}},
		{"a segment of the old timeline missing before the switch", strings.Replace(whole, "000000010000000000000004 ", "", 1), both,
			[]string{"missing 000000010000000000000004"}},
		{"the new timeline's first segment missing", strings.Replace(whole, "000000030000000000000008 ", "", 1), both,
			[]string{"timeline 3 starts at 000000030000000000000009, not at 000000030000000000000008 where the timeline before it left off"}},
		{"a history file missing", whole, Histories{3: both[3]}, []string{"no 00000002.history, though the archive holds segments of timeline 2"}},
		{"segments of the old timeline after the switch are not needed", whole + " 000000010000000000000006", both, nil},
		{"a timeline that ended in the segment it began in", "000000010000000000000002 000000010000000000000003 000000030000000000000003 000000030000000000000004",
			Histories{2: history("1\t0/3000100\tx\n"), 3: history("1\t0/3000100\tx\n2\t0/3000200\tx\n")}, nil},
	}
	for _, tc := range tests {
		got := ContinuityBreaks(names(tc.names), tc.histories, seg)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
