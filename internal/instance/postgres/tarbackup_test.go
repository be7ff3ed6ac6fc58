package postgres_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
	"example.com/platform-operator/internal/objectstore"
)

// The end of a backup manifest, as PostgreSQL 15 writes it.
const manifestEnd = `{ "Path": "global/pg_control", "Size": 8192, "Last-Modified": "2026-12-07 06:31:54 GMT", "Checksum-Algorithm": "CRC32C", "Checksum": "43872087" }
],
"WAL-Ranges": [
{ "Timeline": 1, "Start-LSN": "0/4000028", "End-LSN": "0/4000100" }
],
"Manifest-Checksum": "d15630df6cdef2606c156ba5805ecd7a513283628888a99a7dd0d3ec38f5436b"}
`

const tarLabel = `START WAL LOCATION: 0/4000028 (file 000000010000000000000004)
CHECKPOINT LOCATION: 0/4000060
BACKUP METHOD: streamed
BACKUP FROM: primary
START TIME: 2026-12-07 06:31:54 UTC
LABEL: nightly-1
START TIMELINE: 1
`

func TestParseManifestTailEnd(t *testing.T) {
	for _, tc := range []struct {
		name, tail string
		want       string
		wantErr    string
	}{
		{name: "one range", tail: manifestEnd, want: "0/4000100"},
		{name: "the last of ranges across a timeline switch", tail: `"WAL-Ranges": [
{ "Timeline": 2, "Start-LSN": "0/5000000", "End-LSN": "1/A0000F8" },
{ "Timeline": 1, "Start-LSN": "0/4000028", "End-LSN": "0/5000000" }
]}`, want: "0/5000000"},
		{name: "a file named End-LSN before the ranges is not read", tail: `{ "Path": "\"End-LSN\": \"9/9\"" }],
"WAL-Ranges": [{ "Timeline": 1, "Start-LSN": "0/1", "End-LSN": "0/2" }]}`, want: "0/2"},
		{name: "cut before the ranges", tail: `{ "Path": "global/pg_control" }`, wantErr: "no WAL-Ranges"},
		{name: "ranges without an end", tail: `"WAL-Ranges": [ ]}`, wantErr: "no End-LSN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := postgres.ParseManifestTailEnd([]byte(tc.tail))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// tarOf is a tar stream of the named files, in order.
func tarOf(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o600, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadTarBackupLabel(t *testing.T) {
	big := strings.Repeat(`{ "Path": "base/1/1234", "Size": 8192, "Checksum": "00000000" },`+"\n", 5000) // past what is kept of it
	for _, tc := range []struct {
		name    string
		stream  func(t *testing.T) []byte
		wantErr string
	}{
		{name: "label first, manifest last, as pg_basebackup writes them", stream: func(t *testing.T) []byte {
			return tarOf(t, "backup_label", tarLabel, "PG_VERSION", "15\n", "backup_manifest", "{\n"+big+manifestEnd)
		}},
		{name: "no manifest", stream: func(t *testing.T) []byte { return tarOf(t, "backup_label", tarLabel) }, wantErr: "no backup_manifest"},
		{name: "no label", stream: func(t *testing.T) []byte { return tarOf(t, "backup_manifest", manifestEnd) }, wantErr: "no backup_label"},
		{name: "cut stream", stream: func(t *testing.T) []byte {
			whole := tarOf(t, "backup_label", tarLabel, "backup_manifest", manifestEnd)
			return whole[:700]
		}, wantErr: "read the tar stream"},
		{name: "a label of another file name is not the backup's", stream: func(t *testing.T) []byte {
			return tarOf(t, "base/backup_label", tarLabel, "backup_manifest", manifestEnd)
		}, wantErr: "no backup_label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, err := postgres.ReadTarBackupLabel(bytes.NewReader(tc.stream(t)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", label, err, tc.wantErr)
				}
				return
			}
			if err != nil || label.StartLSN.String() != "0/4000028" || label.EndLSN.String() != "0/4000100" || label.Timeline != 1 || label.FromStandby || label.Label != "nightly-1" {
				t.Fatalf("got %+v, %v; want 0/4000028 to 0/4000100 on timeline 1, from a primary, label nightly-1", label, err)
			}
		})
	}
}

// A tar base backup of a primary is refused while it does not archive
// WAL; once it does, the stream is a data directory and ends after the
// backup's WAL is archived. A store that fails stops pg_basebackup.
func TestTarBaseBackupOfAnArchivingPrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	a := postgrestest.NewInstance(t, "pg-tar")
	if err := a.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl's secret"}); err != nil {
		t.Fatal(err)
	}
	proc := postgrestest.Start(ctx, t, a)
	const password = "backup's secret"
	if err := a.EnsureReplicationRole(ctx, postgres.BackupUser, password); err != nil {
		t.Fatal(err)
	}
	backup := postgres.TarBaseBackup{BinDir: a.BinDir, Label: "nightly-1", Credential: a.Credential, Log: a.Log,
		Source: postgrestest.TCP(a, postgres.BackupUser, password, "postgres")}
	var stored bytes.Buffer
	store := func(r io.Reader) error { stored.Reset(); _, err := io.Copy(&stored, r); return err }

	if _, err := backup.Stream(ctx, store); err == nil || !strings.Contains(err.Error(), "does not archive WAL") {
		t.Fatalf("backup of a primary that does not archive: %v, want a refusal", err)
	}

	archive := filepath.Join(filepath.Dir(a.DataDir), "archive")
	if err := os.Mkdir(archive, 0o700); err != nil {
		t.Fatal(err)
	}
	if a.Credential != nil {
		if err := os.Chown(archive, int(a.Credential.Uid), int(a.Credential.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	execOn(ctx, t, a, "ALTER SYSTEM SET archive_mode = on")
	execOn(ctx, t, a, "ALTER SYSTEM SET archive_command = 'cp %p "+archive+"/%f'")
	postgrestest.StopProcess(t, proc)
	postgrestest.Start(ctx, t, a)

	label, err := backup.Stream(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if label.Timeline != 1 || label.StartLSN == 0 || label.EndLSN < label.StartLSN || label.FromStandby || label.Label != "nightly-1" {
		t.Fatalf("label %+v, want timeline 1, from a primary, an end after its start, label nightly-1", label)
	}
	names := map[string]bool{}
	tr := tar.NewReader(&stored)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the stored stream is not a tar: %v", err)
		}
		names[filepath.Clean(h.Name)] = true
	}
	for _, want := range []string{"PG_VERSION", "global/pg_control", "backup_label", "backup_manifest"} {
		if !names[want] {
			t.Errorf("the stored tar has no %s", want)
		}
	}
	// The segment where the backup ends was archived before it ended.
	const segSize = 16 << 20
	segment := filepath.Join(archive, objectstore.SegmentName(uint32(label.Timeline), uint64(label.EndLSN)/segSize, segSize))
	if _, err := os.Stat(segment); err != nil {
		t.Errorf("the backup's last WAL segment is not archived: %v", err)
	}

	failing := func(r io.Reader) error {
		if _, err := io.CopyN(io.Discard, r, 1<<20); err != nil {
			return err
		}
		return errors.New("the store is down")
	}
	if _, err := backup.Stream(ctx, failing); err == nil || !strings.Contains(err.Error(), "the store is down") {
		t.Fatalf("backup into a failing store: %v, want its error", err)
	}
}
