package instance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/objectstore"
)

// Continuous archiving and recovery from an object store. PostgreSQL runs
// archive_command and restore_command with an environment of nothing (see
// postgres.Instance.childEnv), so the manager writes what they need, the
// store's location and keys, into a file of the instance's memory-backed
// socket directory, and both commands are this binary reading it.

const (
	// archiveConfigFile, in the socket directory, is that file.
	archiveConfigFile = "object-store.json"
	// archiveFailureFile, beside it, is the last failure of wal-archive:
	// pg_stat_archiver says which file failed, not why.
	archiveFailureFile = "archive-failure.json"
	// archiveClaimedFile, beside it, says for which configuration the
	// bucket was made and the location claimed.
	archiveClaimedFile = "archive-claimed.json"
)

// defaultArchiveTimeout is spec.backup.archiveTimeout's default.
const defaultArchiveTimeout = 5 * time.Minute

// archiveConfig is the content of archiveConfigFile.
type archiveConfig struct {
	// Archive is where WAL goes, nil when the cluster archives none;
	// Owner the cluster, which must own that location.
	Archive *objectstore.Location `json:"archive,omitempty"`
	Owner   objectstore.Owner     `json:"owner"`
	// Recovery is where a recovery reads WAL from.
	Recovery *objectstore.Location `json:"recovery,omitempty"`
}

// archiveFailure is the content of archiveFailureFile.
type archiveFailure struct {
	WAL   string    `json:"wal"`
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// archiveSettings are the archiving settings of pg for this instance; nil
// when the cluster archives nothing.
func (m *Manager) archiveSettings(pg *v1alpha1.PostgresCluster) *postgres.Archive {
	if pg.Spec.Backup == nil || m.opts.Archive == nil || len(m.opts.SelfCommand) == 0 {
		return nil
	}
	timeout := defaultArchiveTimeout
	if t := pg.Spec.Backup.ArchiveTimeout; t != nil {
		timeout = t.Duration
	}
	return &postgres.Archive{
		Command: m.toolCommand("wal-archive", "%p"),
		Timeout: fmt.Sprintf("%ds", int(timeout.Seconds())),
	}
}

// recoverySettings are the settings of a recovery from the object store,
// while the data is a base backup being recovered; nil otherwise.
func (m *Manager) recoverySettings(pg *v1alpha1.PostgresCluster) *postgres.Recovery {
	b := pg.Spec.Bootstrap
	if b == nil || b.FromBackup == nil || b.FromBackup.ObjectStore == nil || m.opts.Recovery == nil || len(m.opts.SelfCommand) == 0 {
		return nil
	}
	if m.pg.Initialized() {
		if recovering, err := m.pg.RecoveryConfigured(); err != nil || !recovering {
			return nil
		}
	}
	r := &postgres.Recovery{RestoreCommand: m.toolCommand("wal-restore", "%f", "%p"), TargetLSN: b.FromBackup.TargetLSN, TargetName: b.FromBackup.TargetName}
	if t := b.FromBackup.TargetTime; t != nil {
		r.TargetTime = t.UTC().Format("2006-01-02 15:04:05.999999-07")
	}
	return r
}

// toolCommand is the shell command PostgreSQL runs for one of this
// binary's archive tools, with its placeholders.
func (m *Manager) toolCommand(tool string, placeholders ...string) string {
	words := append(append([]string{}, m.opts.SelfCommand...), tool, "--config", m.archiveConfigPath())
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(append(quoted, placeholders...), " ")
}

func (m *Manager) archiveConfigPath() string {
	return filepath.Join(m.opts.SocketDir, archiveConfigFile)
}

// shellQuote quotes s for /bin/sh, which runs archive_command.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeArchiveConfig writes archiveConfigFile when what it says changed.
func (m *Manager) writeArchiveConfig(pg *v1alpha1.PostgresCluster) error {
	if m.opts.Archive == nil && m.opts.Recovery == nil {
		return nil
	}
	cfg := archiveConfig{Archive: m.opts.Archive, Recovery: m.opts.Recovery,
		Owner: objectstore.Owner{UID: string(pg.UID), Namespace: pg.Namespace, Cluster: pg.Name}}
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode the object store's configuration: %w", err)
	}
	if bytes.Equal(data, m.archiveConfigWritten) {
		return nil
	}
	if err := m.pg.WriteFile(m.archiveConfigPath(), data); err != nil {
		return fmt.Errorf("write the object store's configuration: %w", err)
	}
	m.archiveConfigWritten = data
	return nil
}

func readArchiveConfig(path string) (archiveConfig, error) {
	var cfg archiveConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read the object store's configuration: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("read the object store's configuration %s: %w", path, err)
	}
	return cfg, nil
}

// ArchiveWAL is `instance wal-archive --config FILE PATH`, PostgreSQL's
// archive_command: it returns nil only once the store holds the file.
// A failure is also written beside the configuration for the manager to
// report.
func ArchiveWAL(ctx context.Context, configPath, walPath string) error {
	err := archiveWAL(ctx, configPath, walPath)
	if err != nil {
		failure, _ := json.Marshal(archiveFailure{WAL: filepath.Base(walPath), At: time.Now().UTC(), Error: err.Error()})
		_ = os.WriteFile(filepath.Join(filepath.Dir(configPath), archiveFailureFile), failure, 0o600)
	}
	return err
}

func archiveWAL(ctx context.Context, configPath, walPath string) error {
	if takeMark(configPath, filepath.Base(walPath)) {
		return nil
	}
	cfg, err := readArchiveConfig(configPath)
	if err != nil {
		return err
	}
	if cfg.Archive == nil {
		return errors.New("the cluster has no spec.backup.objectStore: nothing to archive to")
	}
	store, err := objectstore.New(*cfg.Archive)
	if err != nil {
		return err
	}
	if err := claimOnce(ctx, store, configPath, cfg); err != nil {
		return err
	}
	return archiveWithAhead(ctx, store, configPath, walPath)
}

// claimOnce makes the bucket and claims the location for the cluster, the
// first time the configuration says so: PostgreSQL runs wal-archive once
// per segment, and two more round trips each time would only tell it
// again. The mark, in the pod's memory-backed socket directory, names the
// configuration it was made for; another location or owner claims anew.
func claimOnce(ctx context.Context, store *objectstore.Client, configPath string, cfg archiveConfig) error {
	want, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode the object store's configuration: %w", err)
	}
	if have, err := os.ReadFile(claimMarkPath(configPath)); err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := store.EnsureBucket(ctx); err != nil {
		return err
	}
	if err := store.ClaimArchive(ctx, cfg.Owner); err != nil {
		return err
	}
	// Without the mark the next segment claims again: no harm.
	_ = writeClaimMark(configPath, cfg)
	return nil
}

func claimMarkPath(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), archiveClaimedFile)
}

func writeClaimMark(configPath string, cfg archiveConfig) error {
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode the object store's configuration: %w", err)
	}
	return os.WriteFile(claimMarkPath(configPath), data, 0o600)
}

// errNotArchived is RestoreWAL's answer for a file the archive does not
// hold, which PostgreSQL asks for as a matter of course (the next segment,
// a later timeline's history): an exit status, not an error to log.
var errNotArchived = errors.New("not archived")

// RestoreWAL is `instance wal-restore --config FILE NAME PATH`,
// PostgreSQL's restore_command.
func RestoreWAL(ctx context.Context, configPath, name, dest string) error {
	cfg, err := readArchiveConfig(configPath)
	if err != nil {
		return err
	}
	if cfg.Recovery == nil {
		return errors.New("the cluster restores from no object store")
	}
	store, err := objectstore.New(*cfg.Recovery)
	if err != nil {
		return err
	}
	err = store.RestoreWAL(ctx, name, dest)
	if errors.Is(err, objectstore.ErrNotFound) {
		return errNotArchived
	}
	return err
}

// archivingReadInterval is how often a primary reads its archiver's state
// for its report: the manager reports every half second, and archiving
// moves once per segment, or per archiveTimeout.
const archivingReadInterval = 5 * time.Second

// archivingReport is what a primary reports of its archiving: the last
// reading, read again when archivingReadInterval has passed.
func (m *Manager) archivingReport(ctx context.Context) *v1alpha1.PostgresArchivingStatus {
	now := m.clock.Now()
	if m.archiving != nil && now.Sub(m.archivingAt) < archivingReadInterval {
		return m.archiving.DeepCopy()
	}
	m.archiving, m.archivingAt = m.readArchiving(ctx), now
	return m.archiving.DeepCopy()
}

func (m *Manager) readArchiving(ctx context.Context) *v1alpha1.PostgresArchivingStatus {
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	stats, err := m.pg.ArchiverStats(readCtx)
	if err != nil {
		return &v1alpha1.PostgresArchivingStatus{LastFailure: "the archiver's state cannot be read: " + err.Error()}
	}
	a := &v1alpha1.PostgresArchivingStatus{LastArchivedWAL: stats.LastArchivedWAL, LastFailedWAL: stats.LastFailedWAL, PendingWAL: int64(stats.Pending)}
	if c := m.catalog.latest.Load(); c != nil {
		a.FirstRecoverabilityPoint, a.LastSuccessfulBackup, a.BaseBackups = c.first, c.last, c.count
	}
	if !stats.LastArchivedAt.IsZero() {
		a.LastArchivedAt = timePtr(stats.LastArchivedAt)
	}
	if !stats.LastFailedAt.IsZero() {
		a.LastFailedAt = timePtr(stats.LastFailedAt)
		var f archiveFailure
		if data, err := os.ReadFile(filepath.Join(m.opts.SocketDir, archiveFailureFile)); err == nil && json.Unmarshal(data, &f) == nil && f.WAL == stats.LastFailedWAL {
			a.LastFailure = truncate(f.Error, 1000)
		}
	}
	return a
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// fetchBaseBackup makes the data directory from the base backup that the
// recovery target of pg's bootstrap starts from.
func (m *Manager) fetchBaseBackup(ctx context.Context, pg *v1alpha1.PostgresCluster) error {
	if m.opts.Recovery == nil {
		return errors.New("the pod names no object store to restore from: it was made by an operator without fromBackup.objectStore")
	}
	store, err := objectstore.New(*m.opts.Recovery)
	if err != nil {
		return err
	}
	backups, err := store.ListBaseBackups(ctx)
	if err != nil {
		return err
	}
	from := pg.Spec.Bootstrap.FromBackup
	target := objectstore.Target{Name: from.TargetName, Backup: from.Name}
	if from.TargetTime != nil {
		t := from.TargetTime.Time
		target.Time = &t
	}
	if from.TargetLSN != "" {
		lsn, err := postgres.ParseLSN(from.TargetLSN)
		if err != nil {
			return fmt.Errorf("spec.bootstrap.fromBackup.targetLSN: %w", err)
		}
		target.LSN = uint64(lsn)
	}
	lsnOf := func(s string) uint64 {
		lsn, _ := postgres.ParseLSN(s)
		return uint64(lsn)
	}
	// Recovery follows the archive's latest timeline: only a backup on its
	// history can start it.
	histories, err := store.ReadHistories(ctx, func(s string) (uint64, error) {
		lsn, err := postgres.ParseLSN(s)
		return uint64(lsn), err
	})
	if err != nil {
		return err
	}
	if backups, err = histories.OnLatestTimeline(backups, target, lsnOf); err != nil {
		return err
	}
	chosen, err := objectstore.ChooseBaseBackup(backups, target, lsnOf)
	if err != nil {
		return err
	}
	if err := m.holdRestoreBackup(ctx, store, pg, chosen); err != nil {
		return err
	}
	m.log.Info("Restoring a base backup from the object store", "backup", chosen.ID, "endedAt", chosen.EndedAt, "timeline", chosen.Timeline)
	m.pg.Settings = m.settingsOf(pg)
	return m.pg.FetchBaseBackup(ctx, func(ctx context.Context, dir string) error {
		return store.FetchBaseBackup(ctx, chosen, dir)
	})
}

// checkArchiving makes a primary that has archived nothing yet switch to a
// new WAL file once, so that its first file is archived now rather than
// after archive_timeout: the cluster's status then tells at once whether
// archiving works (the store's address, its keys, the path's owner).
func (m *Manager) checkArchiving(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState) {
	if m.archivingChecked || pg.Spec.Backup == nil || m.opts.Archive == nil || !s.ready || s.state.InRecovery {
		return
	}
	stats, err := m.pg.ArchiverStats(ctx)
	if err != nil {
		return
	}
	m.archivingChecked = true
	if stats.LastArchivedWAL != "" || stats.LastFailedWAL != "" || stats.Pending > 0 {
		return
	}
	conn, err := m.pg.Connect(ctx, "postgres")
	if err != nil {
		m.archivingChecked = false
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
		m.log.Info("The first WAL switch for archiving failed", "error", err.Error())
		m.archivingChecked = false
	}
}
