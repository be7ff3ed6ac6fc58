package postgres

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-logr/logr"
)

// TarBaseBackup is a base backup of a primary streamed as one tar
// (pg_basebackup --format tar --pgdata -) to whoever stores it, for an
// object store. It holds no WAL (--wal-method none: a tar on standard
// output cannot carry the streamed WAL beside it): the WAL it needs is in
// the archive. With archive_mode on, the primary ends the backup only once
// that WAL is archived, so a backup whose stream ended whole can be
// restored from the store; that is why a primary is copied, and why a
// server that does not archive is refused.
type TarBaseBackup struct {
	// BinDir holds pg_basebackup.
	BinDir string
	// Source reaches the primary as a role with the replication right;
	// its password reaches pg_basebackup in its environment.
	Source ConnInfo
	// Label names the backup in its backup_label.
	Label string
	// Credential is the OS user pg_basebackup runs as; nil runs it as
	// this process's user.
	Credential *syscall.Credential
	Log        logr.Logger
}

// Stream runs pg_basebackup and hands its tar stream to put, which reads
// it to its end or returns an error (pg_basebackup is then stopped). The
// stream ends in an error, not EOF, when pg_basebackup fails, so that put
// never stores a cut copy as whole. Stream returns where the backup starts
// and ends, read from the backup_label and backup_manifest in the stream.
func (b TarBaseBackup) Stream(ctx context.Context, put func(io.Reader) error) (BackupLabel, error) {
	if err := b.Source.validate(); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: source: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tools := &Instance{Name: "base backup", BinDir: b.BinDir, Credential: b.Credential, Log: b.Log}
	cmd := exec.CommandContext(ctx, tools.bin("pg_basebackup"),
		"--pgdata", "-",
		"--format", "tar",
		"--wal-method", "none",
		"--checkpoint", "fast",
		"--dbname", b.Source.String(),
		"--no-password",
		"--label", b.Label,
		"--verbose",
	)
	cmd.Env = tools.childEnv(passwordEnv(b.Source)...)
	cmd.Dir = "/"
	cmd.SysProcAttr = tools.sysProcAttr(syscall.SIGKILL)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	stderr := &tailBuffer{limit: outputLimit}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: %w", err)
	}
	log := b.Log.WithValues("source", b.Source.String())
	log.Info("Streaming a base backup")
	if err := cmd.Start(); err != nil {
		return BackupLabel{}, fmt.Errorf("base backup: start pg_basebackup: %w", err)
	}
	scan := newBackupFilesScanner()
	stream := &toolStream{r: io.TeeReader(stdout, scan), wait: func() error {
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("pg_basebackup from %s: %w%s", b.Source, err, outputSuffix(stderr.String()))
		}
		return nil
	}}
	putErr := put(stream)
	if !stream.done.Load() {
		// put stopped before the end: pg_basebackup would block on a
		// full pipe for ever.
		cancel()
	}
	waitErr := stream.finish()
	files := scan.close()
	switch {
	case waitErr != nil && putErr == nil:
		return BackupLabel{}, waitErr
	case putErr != nil:
		return BackupLabel{}, errors.Join(fmt.Errorf("store the base backup from %s: %w", b.Source, putErr), waitErr)
	}
	if strings.Contains(stderr.String(), archivingOffNotice) {
		return BackupLabel{}, fmt.Errorf("base backup from %s: the server does not archive WAL (archive_mode is off): "+
			"a base backup in an object store cannot be restored without the WAL archived with it", b.Source)
	}
	label, err := files.label()
	if err != nil {
		return BackupLabel{}, fmt.Errorf("base backup from %s: %w", b.Source, err)
	}
	if label.FromStandby {
		return BackupLabel{}, fmt.Errorf("base backup from %s: the server is a standby, which does not wait for the backup's WAL to be archived: copy the primary", b.Source)
	}
	log.Info("Streamed a base backup", "startLSN", label.StartLSN.String(), "endLSN", label.EndLSN.String(), "timeline", label.Timeline)
	return label, nil
}

// archivingOffNotice is what the server says, through pg_basebackup, at
// the end of a backup it did not wait to archive the WAL of (the tools
// run in the C locale: the message is not translated).
const archivingOffNotice = "WAL archiving is not enabled"

// toolStream is a tool's standard output that ends, once the tool
// exited, in its error rather than EOF when it failed. Its reader may
// still be reading (a compressing goroutine of the store's) when Stream
// gives up on it: the tool is waited for once, whoever gets there first.
type toolStream struct {
	r    io.Reader
	wait func() error
	once sync.Once
	done atomic.Bool
	err  error
}

func (s *toolStream) Read(p []byte) (int, error) {
	if s.done.Load() {
		return 0, orEOF(s.err)
	}
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, orEOF(s.finish())
	}
	return n, err
}

// finish waits for the tool, once, and returns its error.
func (s *toolStream) finish() error {
	s.once.Do(func() {
		s.err = s.wait()
		s.done.Store(true)
	})
	return s.err
}

// orEOF is err, or io.EOF for none.
func orEOF(err error) error {
	if err != nil {
		return err
	}
	return io.EOF
}

// Of the files of a base backup's tar, backup_label is read whole (a few
// lines), backup_manifest only its end, where its WAL ranges are: the
// manifest lists every file of the database and can be large.
const (
	backupLabelLimit  = 64 << 10
	manifestTailLimit = 64 << 10
)

// backupFiles are what a base backup's tar says of the backup.
type backupFiles struct {
	labelText    []byte
	manifestTail []byte
	err          error
}

// label is the backup's label with its end from the manifest.
func (f backupFiles) label() (BackupLabel, error) {
	if f.err != nil {
		return BackupLabel{}, fmt.Errorf("read the tar stream: %w", f.err)
	}
	if f.labelText == nil {
		return BackupLabel{}, fmt.Errorf("the tar stream holds no %s", backupLabelFile)
	}
	label, err := ParseBackupLabel(string(f.labelText))
	if err != nil {
		return BackupLabel{}, fmt.Errorf("%s: %w", backupLabelFile, err)
	}
	if f.manifestTail == nil {
		return BackupLabel{}, fmt.Errorf("the tar stream holds no %s", backupManifestFile)
	}
	if label.EndLSN, err = ParseManifestTailEnd(f.manifestTail); err != nil {
		return BackupLabel{}, fmt.Errorf("%s: %w", backupManifestFile, err)
	}
	if label.EndLSN < label.StartLSN {
		return BackupLabel{}, fmt.Errorf("the backup ends at %s, before its start %s", label.EndLSN, label.StartLSN)
	}
	return label, nil
}

// backupFilesScanner reads a tar stream written to it, as it passes on to
// the store, for the files that say where the backup starts and ends.
type backupFilesScanner struct {
	pw    *io.PipeWriter
	done  chan struct{}
	once  sync.Once
	files backupFiles
}

func newBackupFilesScanner() *backupFilesScanner {
	pr, pw := io.Pipe()
	s := &backupFilesScanner{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.files = scanBackupFiles(pr)
		// Whatever the tar held, the writer must never block.
		_, _ = io.Copy(io.Discard, pr)
	}()
	return s
}

func (s *backupFilesScanner) Write(p []byte) (int, error) { return s.pw.Write(p) }

// close ends the stream and returns what was found in it.
func (s *backupFilesScanner) close() backupFiles {
	s.once.Do(func() { _ = s.pw.Close() })
	<-s.done
	return s.files
}

// scanBackupFiles reads a tar stream for backup_label and the end of
// backup_manifest.
func scanBackupFiles(r io.Reader) backupFiles {
	var f backupFiles
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return f
		}
		if err != nil {
			f.err = err
			return f
		}
		switch path.Clean(h.Name) {
		case backupLabelFile:
			if f.labelText, err = io.ReadAll(io.LimitReader(tr, backupLabelLimit)); err != nil {
				f.err = err
				return f
			}
		case backupManifestFile:
			tail := &tailBuffer{limit: manifestTailLimit}
			if _, err := io.Copy(tail, tr); err != nil {
				f.err = err
				return f
			}
			f.manifestTail = tail.buf.Bytes()
		}
	}
}

// manifestEndLSN matches the End-LSN of a WAL range of a backup manifest.
var manifestEndLSN = regexp.MustCompile(`"End-LSN"\s*:\s*"([0-9A-Fa-f]+/[0-9A-Fa-f]+)"`)

// ParseManifestTailEnd is the end of the WAL a backup manifest says the
// backup needs, read from the manifest's end only: the last End-LSN after
// its "WAL-Ranges" key, which comes after the list of files.
func ParseManifestTailEnd(tail []byte) (LSN, error) {
	i := bytes.LastIndex(tail, []byte(`"WAL-Ranges"`))
	if i < 0 {
		return 0, errors.New("no WAL-Ranges at the end of the backup manifest")
	}
	matches := manifestEndLSN.FindAllSubmatch(tail[i:], -1)
	if len(matches) == 0 {
		return 0, errors.New("the backup manifest's WAL-Ranges have no End-LSN")
	}
	end, err := ParseLSN(string(matches[len(matches)-1][1]))
	if err != nil {
		return 0, fmt.Errorf("End-LSN: %w", err)
	}
	return end, nil
}
