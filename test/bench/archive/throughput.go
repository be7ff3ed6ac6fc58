package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"example.com/platform-operator/internal/objectstore"
	"example.com/platform-operator/test/bench/benchkit"
)

const (
	// sampleEvery is how often the backlog (.ready files) is counted.
	sampleEvery = time.Second
	// catchUpPoll is how often the wait for the archiver looks.
	catchUpPoll = 100 * time.Millisecond
	// workloadMargin is what a pgbench run may take beyond -duration
	// (connecting, its last transactions) before it is stopped.
	workloadMargin = 2 * time.Minute
	// initTimeout bounds pgbench's initialization, and the bulk inserts.
	initTimeout = 30 * time.Minute
	// uploadTimeout bounds each reference's loop.
	uploadTimeout = 30 * time.Minute
)

// measure runs the phases in order: the archive throughput under pgbench's
// initialization, TPC-B and bulk inserts, the references on the bulk
// inserts' WAL, then the restore.
func (b *bench) measure(ctx context.Context) error {
	conn, err := b.pg.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, "SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'").Scan(&b.res.Store.SegmentBytes); err != nil {
		return fmt.Errorf("read wal_segment_size: %w", err)
	}
	m := &monitor{b: b, conn: conn, segSize: b.res.Store.SegmentBytes}

	var errs []error
	b.phase("pgbench-init", func() {
		logf("pgbench -i -s %d, archiving as it goes", b.cfg.scale)
		s, err := m.sustained(ctx, "pgbench -i -s "+strconv.Itoa(b.cfg.scale), func(ctx context.Context) (float64, error) {
			_, err := b.pgbench(ctx, "init", initTimeout, "-i", "-s", strconv.Itoa(b.cfg.scale), "-q")
			return 0, err
		})
		b.res.Archive.Init = s
		errs = append(errs, err)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var window []string
	timed := []string{"-n", "-T", strconv.Itoa(int(b.cfg.duration.Seconds())), "-c", strconv.Itoa(b.cfg.clients), "-j", strconv.Itoa(b.cfg.jobs)}
	b.phase("pgbench-tpcb", func() {
		logf("pgbench %s (TPC-B), archiving as it goes", strings.Join(timed, " "))
		s, err := m.sustained(ctx, "pgbench "+strings.Join(timed, " "), func(ctx context.Context) (float64, error) {
			return b.pgbench(ctx, "tpcb", b.cfg.duration+workloadMargin, timed...)
		})
		b.res.Archive.TPCB = s
		errs = append(errs, err)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.phase("pgbench-insert", func() {
		script := filepath.Join(b.dir, "insert.sql")
		// Transactions per client for about -insert-mib of WAL in all.
		perClient := max(1, b.cfg.insertMiB*(1<<20)/(insertRows*1024)/b.cfg.clients)
		args := []string{"-n", "-t", strconv.Itoa(perClient), "-c", strconv.Itoa(b.cfg.clients), "-j", strconv.Itoa(b.cfg.jobs), "-f"}
		logf("pgbench %s (bulk inserts), archiving as it goes", strings.Join(append(args, "insert.sql"), " "))
		if err := os.WriteFile(script, []byte(insertScript), 0o644); err != nil {
			errs = append(errs, err)
			return
		}
		for _, sql := range []string{insertPayload, insertTable} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				errs = append(errs, err)
				return
			}
		}
		s, err := m.sustained(ctx, "pgbench "+strings.Join(append(slices.Clone(args), "insert.sql"), " "), func(ctx context.Context) (float64, error) {
			return b.pgbench(ctx, "insert", initTimeout, append(args, script)...)
		})
		b.res.Archive.Insert = s
		window = s.names
		// bench_wal stays: the restore copies it with pgbench's tables,
		// whose blank-padded rows alone would make gzip look far better
		// than on typical data.
		if _, terr := conn.Exec(ctx, "DROP TABLE bench_payload"); terr != nil {
			err = errors.Join(err, terr)
		}
		errs = append(errs, err)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.phase("references", func() {
		refs, err := b.references(ctx, window)
		b.res.Archive.References = refs
		errs = append(errs, err)
	})
	b.phase("restore", func() {
		r, err := b.restore(ctx, conn)
		b.res.Restore = r
		errs = append(errs, err)
	})
	return errors.Join(errs...)
}

// The bulk-insert workload: WAL as fast as the server writes it, so that
// it comes faster than one archive_command at a time carries it. Each
// transaction copies insertRows rows of insertPayload, made once: random
// hexadecimal digits, which compress like typical table data rather than
// like pgbench's own rows, mostly blanks; each row short enough to stay
// inline and uncompressed in the table, all of them longer than gzip's
// window, so that it finds no repeats across rows.
const (
	insertRows   = 1000
	insertTable  = "CREATE TABLE bench_wal (payload text)"
	insertScript = "INSERT INTO bench_wal SELECT payload FROM bench_payload;\n"
)

// insertPayload makes bench_payload: 32 MD5s of random numbers a row.
var insertPayload = fmt.Sprintf(`CREATE TABLE bench_payload AS SELECT
	(SELECT string_agg(md5(random()::text || g::text || i::text), '') FROM generate_series(1, 32) i) AS payload
	FROM generate_series(1, %d) g`, insertRows)

// phase runs f and records when it ran and the machine's load around it.
func (b *bench) phase(name string, f func()) {
	p := Phase{Name: name, Start: time.Now(), LoadAvgStart: benchkit.LoadAvg()}
	f()
	p.End, p.LoadAvgEnd = time.Now(), benchkit.LoadAvg()
	b.res.Phases = append(b.res.Phases, p)
}

// monitor reads where WAL and its archiving stand.
type monitor struct {
	b       *bench
	conn    *pgx.Conn
	segSize int64
}

// walState is one reading of the server.
type walState struct {
	at time.Time
	// lsn is the insert position, in bytes.
	lsn               int64
	archived, failed  int64
	lastArchived      string
	timeline          uint32
	pending           int
	lastArchivedSegno int64
}

func (m *monitor) read(ctx context.Context) (walState, error) {
	s := walState{}
	var current string
	if err := m.conn.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint, pg_walfile_name(pg_current_wal_insert_lsn()),
		archived_count, failed_count, coalesce(last_archived_wal, '') FROM pg_stat_archiver`).Scan(
		&s.lsn, &current, &s.archived, &s.failed, &s.lastArchived); err != nil {
		return s, fmt.Errorf("read the WAL position and pg_stat_archiver: %w", err)
	}
	tl, err := strconv.ParseUint(current[:8], 16, 32)
	if err != nil {
		return s, fmt.Errorf("timeline of %s: %w", current, err)
	}
	s.timeline = uint32(tl)
	s.lastArchivedSegno = m.segno(s.lastArchived)
	s.pending, err = m.pending()
	s.at = time.Now()
	return s, err
}

// segno is the segment number of a WAL file's name (a segment, or the
// segment a .backup or .partial file belongs to); -1 for none.
func (m *monitor) segno(name string) int64 {
	if len(name) < 24 {
		return -1
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	if err1 != nil || err2 != nil {
		return -1
	}
	return int64(log)*(0x100000000/m.segSize) + int64(seg)
}

// pending counts the WAL files waiting for archive_command.
func (m *monitor) pending() (int, error) {
	entries, err := os.ReadDir(filepath.Join(m.b.pg.DataDir, "pg_wal", "archive_status"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".ready") {
			n++
		}
	}
	return n, nil
}

// caughtUp waits until every segment before segno end is archived and
// nothing waits for archive_command.
func (m *monitor) caughtUp(ctx context.Context, end int64) (walState, error) {
	var s walState
	err := poll(ctx, m.b.cfg.catchUp, catchUpPoll, "the archiver to catch up", func(ctx context.Context) (bool, error) {
		var err error
		s, err = m.read(ctx)
		return err == nil && s.pending == 0 && s.lastArchivedSegno >= end-1, err
	})
	return s, err
}

// sustained measures the archiving of the WAL that workload writes: it
// switches to a new segment and waits until the archive holds everything
// before (no backlog at the start), runs workload, then waits until every
// segment completed during it is archived. The time is from workload's
// start to that moment; the figure is the segments archived meanwhile ×
// the segment size over that time. workload returns pgbench's tps.
func (m *monitor) sustained(ctx context.Context, what string, workload func(context.Context) (float64, error)) (Sustained, error) {
	r := Sustained{Workload: what}
	if _, err := m.conn.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
		return r, err
	}
	s, err := m.read(ctx)
	if err != nil {
		return r, err
	}
	s0, err := m.caughtUp(ctx, s.lsn/m.segSize)
	if err != nil {
		return r, err
	}

	// The backlog, sampled while the workload runs and the archiver
	// catches up.
	sampler := startBacklogSampler(m, s0.at)
	defer sampler.stop()

	tps, werr := workload(ctx)
	s1, err := m.read(ctx)
	if err != nil || werr != nil {
		return r, errors.Join(werr, err)
	}
	logf("  workload done in %.1f s, %d files wait for archive_command; waiting for the archiver", s1.at.Sub(s0.at).Seconds(), s1.pending)
	end := s1.lsn / m.segSize
	s2, err := m.caughtUp(ctx, end)
	r.Backlog, r.PeakBacklog = sampler.stop()
	if err != nil {
		return r, err
	}

	first := s0.lsn / m.segSize
	for seg := first; seg < end; seg++ {
		r.names = append(r.names, objectstore.SegmentName(s0.timeline, uint64(seg), uint64(m.segSize)))
	}
	mib := float64(m.segSize) / (1 << 20)
	r.TPS = tps
	r.WorkloadSeconds = round3(s1.at.Sub(s0.at).Seconds())
	r.Seconds = round3(s2.at.Sub(s0.at).Seconds())
	r.WALBytes = s1.lsn - s0.lsn
	r.Segments = s2.archived - s0.archived
	r.SegmentsCompleted = end - first
	r.FailedAttempts = s2.failed - s0.failed
	r.BacklogAtWorkloadEnd = s1.pending
	r.MiB = round3(float64(r.Segments) * mib)
	r.MiBPerSecond = round3(r.MiB / r.Seconds)
	r.WALMiBPerSecond = round3(float64(r.WALBytes) / (1 << 20) / r.WorkloadSeconds)
	r.ArchiverBound = s1.pending >= minDrainSegments
	r.DrainSegments = s2.archived - s1.archived
	r.DrainSeconds = round3(s2.at.Sub(s1.at).Seconds())
	if r.DrainSegments >= minDrainSegments {
		r.DrainMiBPerSecond = round3(float64(r.DrainSegments) * mib / r.DrainSeconds)
	}
	if len(r.names) > 0 {
		r.StoredBytes, err = m.b.storedBytes(ctx, archivePath, r.names)
	}
	logf("  %d segments (%.0f MiB) archived in %.1f s: %.1f MiB/s; peak backlog %d files", r.Segments, r.MiB, r.Seconds, r.MiBPerSecond, r.PeakBacklog)
	return r, err
}

// backlogSampler counts the files waiting for archive_command every
// sampleEvery.
type backlogSampler struct {
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
	samples []BacklogSample
	peak    int
}

func startBacklogSampler(m *monitor, since time.Time) *backlogSampler {
	s := &backlogSampler{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			if n, err := m.pending(); err == nil {
				s.samples = append(s.samples, BacklogSample{Seconds: round3(time.Since(since).Seconds()), Ready: n})
				s.peak = max(s.peak, n)
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the samples and their peak.
func (s *backlogSampler) stop() ([]BacklogSample, int) {
	s.once.Do(func() { close(s.done) })
	<-s.stopped
	return s.samples, s.peak
}

// minDrainSegments is the backlog below which the drain after the
// workload is too short to be a rate.
const minDrainSegments = 4

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs pgbench as the superuser over the socket, its output in a
// log of the run, and returns the tps it reports (0 when it reports none,
// as -i).
func (b *bench) pgbench(ctx context.Context, name string, timeout time.Duration, args ...string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args = append([]string{"-h", b.pg.SocketDir, "-p", strconv.Itoa(b.pg.Port), "-U", "postgres"}, append(args, "postgres")...)
	cmd := exec.CommandContext(ctx, filepath.Join(b.cfg.pgBinDir, "pgbench"), args...)
	cmd.Env = []string{"PATH=" + b.cfg.pgBinDir + ":/usr/bin:/bin", "LC_ALL=C"}
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	logPath := filepath.Join(b.dir, "pgbench-"+name+".log")
	_ = os.WriteFile(logPath, out, 0o644)
	if err != nil {
		return 0, fmt.Errorf("pgbench %s: %w; see %s", strings.Join(args, " "), err, logPath)
	}
	if m := tpsLine.FindSubmatch(out); m != nil {
		return strconv.ParseFloat(string(m[1]), 64)
	}
	return 0, nil
}

// references uploads the segments names (archived by PostgreSQL; read
// back from the store, so the same bytes) again to the same store, each
// way to a path of its own, one file after the other, with no workload
// running: the operator's command run once per file, its
// objectstore.Client.ArchiveWAL in this process, and a raw PutObject of
// the uncompressed file by the same client library.
func (b *bench) references(ctx context.Context, names []string) ([]Reference, error) {
	if len(names) == 0 {
		return nil, errors.New("the bulk inserts completed no WAL segment: nothing to upload")
	}
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	archive, err := objectstore.New(b.loc)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.dir, "segments")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	logf("Reading the %d segments of the bulk inserts back from the store", len(names))
	var files []string
	for _, n := range names {
		f := filepath.Join(dir, n)
		if err := archive.RestoreWAL(ctx, n, f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	input := int64(len(files)) * b.res.Store.SegmentBytes

	type way struct {
		name, path, what string
		upload           func(ctx context.Context, file string) error
	}
	commandLoc, inProcessLoc := b.loc, b.loc
	commandLoc.Prefix, inProcessLoc.Prefix = commandPath, inProcessPath
	commandConfig := filepath.Join(b.dir, "ref-command.json")
	if err := os.WriteFile(commandConfig, archiveConfigJSON(commandLoc, "bench-ref-command"), 0o600); err != nil {
		return nil, err
	}
	inProcess, err := objectstore.New(inProcessLoc)
	if err != nil {
		return nil, err
	}
	raw := b.rawClient()
	ways := []way{
		{"command per file", commandPath, "`platform-operator instance wal-archive --config FILE SEGMENT` run once per file, one after the other, by this program: archive_command's work without PostgreSQL's archiver and without the workload",
			func(ctx context.Context, file string) error {
				out, err := exec.CommandContext(ctx, b.cfg.operator, "instance", "wal-archive", "--config", commandConfig, file).CombinedOutput()
				if err != nil {
					return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
				}
				return nil
			}},
		{"ArchiveWAL in one process", inProcessPath, "objectstore.Client.ArchiveWAL on each file in a loop in this process, one client: the same gzip, GET, PutObject and HeadObject, without a process, a bucket check and an owner check per file",
			func(ctx context.Context, file string) error { return inProcess.ArchiveWAL(ctx, file) }},
		{"gzip and PutObject", gzipPath, "gzip (level BestSpeed, objectstore's) then aws-sdk-go-v2 PutObject of each file in a loop in this process: ArchiveWAL without its GET before and HeadObject after",
			func(ctx context.Context, file string) error {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				var z bytes.Buffer
				w, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
				if _, err := w.Write(data); err != nil {
					return err
				}
				if err := w.Close(); err != nil {
					return err
				}
				_, err = raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(gzipPath + "/" + filepath.Base(file) + ".gz"),
					Body: bytes.NewReader(z.Bytes()), ContentLength: aws.Int64(int64(z.Len()))})
				return err
			}},
		{"raw PutObject", rawPath, "aws-sdk-go-v2 PutObject of each uncompressed file in a loop in this process, one client with objectstore.New's options: a plain upload",
			func(ctx context.Context, file string) error {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				_, err = raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(rawPath + "/" + filepath.Base(file)),
					Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
				return err
			}},
	}
	var refs []Reference
	for _, w := range ways {
		logf("Reference %q: %d files", w.name, len(files))
		p := Phase{Name: "reference: " + w.name, Start: time.Now(), LoadAvgStart: benchkit.LoadAvg()}
		start := time.Now()
		for _, f := range files {
			if err := w.upload(ctx, f); err != nil {
				return refs, fmt.Errorf("reference %s: %s: %w", w.name, filepath.Base(f), err)
			}
		}
		secs := time.Since(start).Seconds()
		p.End, p.LoadAvgEnd = time.Now(), benchkit.LoadAvg()
		b.res.Phases = append(b.res.Phases, p)
		stored, err := b.storedBytes(ctx, w.path, names)
		if err != nil {
			return refs, err
		}
		mib := float64(input) / (1 << 20)
		refs = append(refs, Reference{Name: w.name, What: w.what, Files: len(files), InputBytes: input, StoredBytes: stored,
			Seconds: round3(secs), MiBPerSecond: round3(mib / secs)})
		logf("  %.0f MiB in %.1f s: %.1f MiB/s", mib, secs, mib/secs)
	}
	return refs, nil
}

// rawClient is an S3 client with objectstore.New's options, for the raw
// reference and for listing.
func (b *bench) rawClient() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(b.loc.Endpoint), Region: region, UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(b.loc.AccessKeyID, b.loc.SecretAccessKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// storedBytes sums the sizes of the objects under path whose base name,
// without .gz, is one of names; all objects under path when names is nil.
func (b *bench) storedBytes(ctx context.Context, path string, names []string) (int64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var total int64
	pages := s3.NewListObjectsV2Paginator(b.rawClient(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(path + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", path, err)
		}
		for _, o := range page.Contents {
			if names == nil || want[strings.TrimSuffix(filepath.Base(aws.ToString(o.Key)), ".gz")] {
				total += aws.ToInt64(o.Size)
			}
		}
	}
	return total, nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
