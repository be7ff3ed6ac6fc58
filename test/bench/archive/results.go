package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

// Results is what results.json holds.
type Results struct {
	benchkit.RunHeader
	// LoadAvgStart and LoadAvgEnd are /proc/loadavg's first three fields
	// at the run's start and end: the machine is shared.
	LoadAvgStart string   `json:"loadAvgStart"`
	LoadAvgEnd   string   `json:"loadAvgEnd"`
	Workload     Workload `json:"workload"`
	Store        Store    `json:"setup"`
	// Phases are the run's steps, each with the load average around it.
	Phases  []Phase  `json:"phases"`
	Archive Archive  `json:"archive"`
	Restore Restore  `json:"restore"`
	Errors  []string `json:"errors,omitempty"`
	Notes   []string `json:"notes"`
}

// Workload is what pgbench was asked.
type Workload struct {
	Scale           int     `json:"scale"`
	DurationSeconds float64 `json:"tpcbSeconds"`
	InsertMiB       int     `json:"insertMiB"`
	Clients         int     `json:"clients"`
	Jobs            int     `json:"jobs"`
}

// Store is what ran: the versions and the archive_command.
type Store struct {
	Weed           string `json:"weed"`
	PostgreSQL     string `json:"postgresql"`
	ArchiveCommand string `json:"archiveCommand"`
	SegmentBytes   int64  `json:"walSegmentBytes"`
}

// Phase is one step of the run.
type Phase struct {
	Name         string    `json:"name"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	LoadAvgStart string    `json:"loadAvgStart"`
	LoadAvgEnd   string    `json:"loadAvgEnd"`
}

// Archive is the throughput of archiving and of its references.
type Archive struct {
	// Init is under pgbench -i (bulk loading), TPCB under pgbench's
	// built-in TPC-B for -duration, Insert under about -insert-mib of
	// bulk inserts; the references upload Insert's segments.
	Init       Sustained   `json:"underPgbenchInit"`
	TPCB       Sustained   `json:"underPgbenchTPCB"`
	Insert     Sustained   `json:"underPgbenchInsert"`
	References []Reference `json:"references"`
}

// Sustained is the archiving of the WAL one workload wrote.
type Sustained struct {
	Workload string  `json:"workload"`
	TPS      float64 `json:"tps,omitempty"`
	// WorkloadSeconds is pgbench's run; Seconds from its start until every
	// segment completed during it was archived.
	WorkloadSeconds float64 `json:"workloadSeconds"`
	Seconds         float64 `json:"secondsToCaughtUp"`
	// WALBytes is the WAL the server inserted during the workload.
	WALBytes        int64   `json:"walBytes"`
	WALMiBPerSecond float64 `json:"walMiBPerSecondWritten"`
	// Segments is pg_stat_archiver's archived_count over Seconds;
	// SegmentsCompleted the segments the workload's WAL filled, which
	// should be the same.
	Segments          int64   `json:"segmentsArchived"`
	SegmentsCompleted int64   `json:"segmentsCompleted"`
	MiB               float64 `json:"mib"`
	MiBPerSecond      float64 `json:"mibPerSecond"`
	FailedAttempts    int64   `json:"failedAttempts"`
	// StoredBytes is what the store holds of these segments (gzipped).
	StoredBytes int64 `json:"storedBytes"`
	// PeakBacklog and BacklogAtWorkloadEnd are .ready files: segments
	// completed and not archived yet. A backlog means the archiver, not
	// the workload, set the pace.
	PeakBacklog          int `json:"peakBacklogFiles"`
	BacklogAtWorkloadEnd int `json:"backlogAtWorkloadEndFiles"`
	// Drain is the archiving after the workload ended, without it; its
	// rate only when at least minDrainSegments were left.
	DrainSegments     int64   `json:"drainSegments"`
	DrainSeconds      float64 `json:"drainSeconds"`
	DrainMiBPerSecond float64 `json:"drainMiBPerSecond,omitempty"`
	// ArchiverBound says the workload outpaced the archiver: at least
	// minDrainSegments files were waiting when it ended. Otherwise the
	// figure is the workload's pace.
	ArchiverBound bool            `json:"archiverBound"`
	Backlog       []BacklogSample `json:"backlog"`

	names []string
}

// BacklogSample is the count of .ready files, seconds after the start.
type BacklogSample struct {
	Seconds float64 `json:"s"`
	Ready   int     `json:"ready"`
}

// Reference is one upload of the bulk inserts' segments with no workload.
type Reference struct {
	Name         string  `json:"name"`
	What         string  `json:"what"`
	Files        int     `json:"files"`
	InputBytes   int64   `json:"inputBytes"`
	StoredBytes  int64   `json:"storedBytes"`
	Seconds      float64 `json:"seconds"`
	MiBPerSecond float64 `json:"mibPerSecond"`
}

// Restore is the restore-time comparison.
type Restore struct {
	// DatabaseBytes is the sum of pg_database_size.
	DatabaseBytes int64 `json:"databaseBytes"`
	// BaseBackup is TakeStoreBackup; its Bytes the tar stream's.
	BaseBackup  Timing `json:"baseBackupToStore"`
	StoredBytes int64  `json:"baseBackupStoredBytes"`
	// Download is a raw GetObject of the backup's data into nothing,
	// DownloadGunzip the same gunzipped: the parts of Fetch. Their Bytes
	// are those read (stored, and tar).
	Download       Timing `json:"downloadAlone"`
	DownloadGunzip Timing `json:"downloadAndGunzip"`
	// Fetch is FetchBaseBackup; the pg_basebackups copy the running
	// server. Bytes are those of the files each wrote.
	Fetch              Timing `json:"fetchBaseBackup"`
	PgBasebackup       Timing `json:"pgBasebackup"`
	PgBasebackupNoSync Timing `json:"pgBasebackupNoSync"`
	// The ratios of seconds per GiB.
	FetchOverPgBasebackup       float64 `json:"fetchOverPgBasebackup"`
	FetchOverPgBasebackupNoSync float64 `json:"fetchOverPgBasebackupNoSync"`
}

// Timing is one copy.
type Timing struct {
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	SecondsPerGiB float64 `json:"secondsPerGiB,omitempty"`
}

// ratio is a ÷ b, 0 without b.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round3(a / b)
}

func writeResults(dir string, res *Results) error {
	sort.SliceStable(res.Phases, func(i, j int) bool { return res.Phases[i].Start.Before(res.Phases[j].Start) })
	data, err := benchkit.JSON(res)
	if err != nil {
		return err
	}
	return benchkit.WriteFiles(dir, map[string]string{"results.json": data, "results.md": markdown(res)})
}

// rows are the table's lines: what, MiB/s or s/GiB, and the ratio.
func rows(res *Results) [][3]string {
	a, r := res.Archive, res.Restore
	var raw, inProcess float64
	for _, ref := range a.References {
		switch ref.Name {
		case "raw PutObject":
			raw = ref.MiBPerSecond
		case "ArchiveWAL in one process":
			inProcess = ref.MiBPerSecond
		}
	}
	out := [][3]string{}
	for _, s := range []struct {
		name string
		s    Sustained
	}{{"archive_command under " + a.Init.Workload, a.Init}, {"archive_command under " + a.TPCB.Workload, a.TPCB}, {"archive_command under " + a.Insert.Workload, a.Insert}} {
		vs := fmt.Sprintf("%.2f× raw PutObject, %.2f× ArchiveWAL in one process", ratio(s.s.MiBPerSecond, raw), ratio(s.s.MiBPerSecond, inProcess))
		if !s.s.ArchiverBound {
			vs = fmt.Sprintf("kept up (files waiting at most: %d): the workload's pace, not archiving's", s.s.PeakBacklog)
		}
		out = append(out, [3]string{s.name + fmt.Sprintf(" (%d segments, peak backlog %d)", s.s.Segments, s.s.PeakBacklog),
			fmt.Sprintf("%.1f MiB/s", s.s.MiBPerSecond), vs})
		if s.s.DrainMiBPerSecond > 0 {
			out = append(out, [3]string{fmt.Sprintf("  its drain after the workload (%d segments)", s.s.DrainSegments),
				fmt.Sprintf("%.1f MiB/s", s.s.DrainMiBPerSecond),
				fmt.Sprintf("%.2f× raw PutObject", ratio(s.s.DrainMiBPerSecond, raw))})
		}
	}
	for _, ref := range a.References {
		out = append(out, [3]string{fmt.Sprintf("reference: %s (%d segments)", ref.Name, ref.Files), fmt.Sprintf("%.1f MiB/s", ref.MiBPerSecond),
			fmt.Sprintf("%.2f× raw PutObject", ratio(ref.MiBPerSecond, raw))})
	}
	out = append(out,
		[3]string{fmt.Sprintf("FetchBaseBackup from the store (%.2f GiB)", float64(r.Fetch.Bytes)/gib), fmt.Sprintf("%.1f s/GiB", r.Fetch.SecondsPerGiB),
			fmt.Sprintf("%.2f× pg_basebackup, %.2f× with --no-sync", r.FetchOverPgBasebackup, r.FetchOverPgBasebackupNoSync)},
		[3]string{fmt.Sprintf("pg_basebackup -X fetch (%.2f GiB)", float64(r.PgBasebackup.Bytes)/gib), fmt.Sprintf("%.1f s/GiB", r.PgBasebackup.SecondsPerGiB), ""},
		[3]string{fmt.Sprintf("pg_basebackup -X fetch --no-sync (%.2f GiB)", float64(r.PgBasebackupNoSync.Bytes)/gib), fmt.Sprintf("%.1f s/GiB", r.PgBasebackupNoSync.SecondsPerGiB), ""},
	)
	return out
}

func printTable(res *Results) {
	fmt.Fprintf(os.Stderr, "\n== WAL archive (load average %s at start, %s at end)\n", res.LoadAvgStart, res.LoadAvgEnd)
	for _, row := range rows(res) {
		fmt.Fprintf(os.Stderr, "%-90s %14s  %s\n", row[0], row[1], row[2])
	}
	for _, e := range res.Errors {
		fmt.Fprintf(os.Stderr, "error: %s\n", e)
	}
}

func markdown(res *Results) string {
	var w benchkit.MarkdownWriter
	w.Header("WAL archiving to an object store (issue 51)", "`make bench-archive` (test/bench/archive)", res.RunHeader)
	w.P("- Load average (1, 5, 15 min): %s at start, %s at end\n", res.LoadAvgStart, res.LoadAvgEnd)
	w.P("- PostgreSQL %s, weed `%s`, WAL segments of %d MiB; pgbench scale %d, TPC-B for %.0f s, about %d MiB of bulk inserts, both with %d clients and %d threads\n\n",
		res.Store.PostgreSQL, firstLine(res.Store.Weed), res.Store.SegmentBytes>>20, res.Workload.Scale, res.Workload.DurationSeconds, res.Workload.InsertMiB, res.Workload.Clients, res.Workload.Jobs)
	w.P("| | Figure | Ratio |\n|---|---:|---|\n")
	for _, row := range rows(res) {
		w.P("| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	w.P("\n## Archiving\n\n| Workload | tps | WAL written | MiB/s written | Segments archived (completed) | Seconds to caught up | MiB/s archived | Peak backlog | Backlog at end | Drain | Stored (gzip) | Failed attempts |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, s := range []Sustained{res.Archive.Init, res.Archive.TPCB, res.Archive.Insert} {
		drain := fmt.Sprintf("%d segments in %.1f s", s.DrainSegments, s.DrainSeconds)
		if s.DrainMiBPerSecond > 0 {
			drain += fmt.Sprintf(": %.1f MiB/s", s.DrainMiBPerSecond)
		}
		tps := "–"
		if s.TPS > 0 {
			tps = fmt.Sprintf("%.0f", s.TPS)
		}
		w.P("| `%s` | %s | %d MiB | %.1f | %d (%d) | %.1f | %.1f | %d | %d | %s | %d MiB | %d |\n", s.Workload, tps, s.WALBytes>>20, s.WALMiBPerSecond,
			s.Segments, s.SegmentsCompleted, s.Seconds, s.MiBPerSecond, s.PeakBacklog, s.BacklogAtWorkloadEnd, drain, s.StoredBytes>>20, s.FailedAttempts)
	}
	w.P("\n## References (the bulk-insert run's segments, no workload)\n\n| Reference | Files | Input | Stored | Seconds | MiB/s | What |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range res.Archive.References {
		w.P("| %s | %d | %d MiB | %d MiB | %.1f | %.1f | %s |\n", r.Name, r.Files, r.InputBytes>>20, r.StoredBytes>>20, r.Seconds, r.MiBPerSecond, r.What)
	}
	r := res.Restore
	w.P("\n## Restore\n\nDatabase: %d MiB (pg_database_size, all databases: pgbench's tables and the bulk inserts' table). Base backup into the store: %.1f s, %d MiB of tar, %d MiB stored.\n\n", r.DatabaseBytes>>20, r.BaseBackup.Seconds, r.BaseBackup.Bytes>>20, r.StoredBytes>>20)
	w.P("| Copy | Seconds | Written (read) | s/GiB |\n|---|---:|---:|---:|\n")
	for _, t := range []struct {
		name string
		t    Timing
	}{{"(GetObject of the backup alone, into nothing)", r.Download}, {"(GetObject and gunzip, into nothing)", r.DownloadGunzip},
		{"FetchBaseBackup", r.Fetch}, {"pg_basebackup -X fetch", r.PgBasebackup}, {"pg_basebackup -X fetch --no-sync", r.PgBasebackupNoSync}} {
		w.P("| %s | %.1f | %d MiB | %.1f |\n", t.name, t.t.Seconds, t.t.Bytes>>20, t.t.SecondsPerGiB)
	}
	w.P("\n## Phases\n\n| Phase | Seconds | Load average at start | at end |\n|---|---:|---|---|\n")
	for _, p := range res.Phases {
		w.P("| %s | %.1f | %s | %s |\n", p.Name, p.End.Sub(p.Start).Seconds(), p.LoadAvgStart, p.LoadAvgEnd)
	}
	w.P("\n")
	w.List("Errors", res.Errors)
	w.List("Notes", res.Notes)
	return w.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func notes(res *Results) []string {
	n := []string{
		"Everything runs on this machine: weed (master, volume, filer and S3 in one process, data on the local disk), PostgreSQL, pgbench, the archive_command processes and this program share its CPUs with whatever else runs; the load average of each phase is in the Phases table.",
		fmt.Sprintf("Archiving figures: before each workload the server switches to a new WAL segment and the archive catches up (no backlog). The time runs from the workload's start until pg_stat_archiver's last archived segment is the last one the workload completed and no .ready file is left (polled every %s); the MiB are pg_stat_archiver's archived_count over that time × the segment size (%d MiB of WAL each, whatever gzip makes of it). The segment in progress at the workload's end is not counted.", catchUpPoll, res.Store.SegmentBytes>>20),
		fmt.Sprintf("A workload's figure is the archiver's pace only when the workload outpaced it (archiverBound: at least %d files waiting when the workload ended); otherwise the archiver kept up and the figure is the workload's WAL rate, a lower bound of what archiving can carry. The drain after the workload, when at least %d segments were left, is the archiver's own pace without the workload.", minDrainSegments, minDrainSegments),
		fmt.Sprintf("The bulk inserts are a pgbench script (%s, bench_payload being %d rows of 1 KiB of random hexadecimal digits, made once) run -t times per client for about -insert-mib of WAL: a writer faster than the archiver, to measure the archiver's limit, not a typical application. Their table stays for the restore.", strings.TrimSpace(insertScript), insertRows),
		"The references upload the bulk-insert run's segments, read back from the store after the run (so the same bytes), to other paths of the same bucket, one file after the other, with no workload: the operator's command once per file (process start, configuration, bucket and owner checks, GET, gzip, PutObject, HeadObject), objectstore.Client.ArchiveWAL in this process (GET, gzip, PutObject, HeadObject), gzip and PutObject alone, and a raw PutObject of the uncompressed file. They run in that order; the files are in the page cache.",
		"PostgreSQL 15 calls archive_command for one file at a time; while files wait, each call uploads up to three of the next waiting ones beside its own, in parallel, and the calls for those return at once.",
		"Restore: the database holds pgbench's tables (blank-padded rows) and the bulk inserts' table (random hexadecimal digits); the stored size of the base backup says what the mix compresses to. FetchBaseBackup downloads, gunzips and untars the base backup into an empty folder, with no fsync; pg_basebackup -X fetch --checkpoint=fast copies the running server (a CHECKPOINT first, so that each copy's own checkpoint has little to write) and fsyncs at its end unless --no-sync. Seconds per GiB are each copy's seconds over the GiB of files it wrote. Not measured: the WAL replay a restore from the store needs before the server opens (restore_command fetching the archived WAL), and the start of the server.",
		"Page cache: the copies read a server whose data is in memory; nothing drops caches (the machine is shared).",
	}
	return n
}
