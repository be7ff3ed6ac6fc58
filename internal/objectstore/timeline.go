package objectstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A recovery follows recovery_target_timeline 'latest': from the base
// backup's timeline, PostgreSQL takes the newest timeline whose history
// file the archive holds, each next one in turn (its findNewestTimeLine),
// and replays along that timeline's history. A base backup that is not on
// that history (a timeline it did not descend from, or one it left before
// the backup was consistent) stops PostgreSQL at start ("requested
// timeline is not a child of this server's history"); the restore refuses
// it first, saying so.

// TimelineSwitch is one line of a timeline's history file: the ancestor
// Timeline, and the LSN at which its successor left it.
type TimelineSwitch struct {
	Timeline uint32
	LSN      uint64
}

// Histories are the archive's timeline history files, parsed, by the
// timeline they are of.
type Histories map[uint32][]TimelineSwitch

// ParseHistory reads a timeline history file (00000002.history): lines of
// ancestor timeline, switch point and reason, comments after #.
func ParseHistory(data []byte, lsnOf func(string) (uint64, error)) ([]TimelineSwitch, error) {
	var history []TimelineSwitch
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("history line %q has no switch point", line)
		}
		tl, err := strconv.ParseUint(fields[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("history line %q: timeline: %w", line, err)
		}
		lsn, err := lsnOf(fields[1])
		if err != nil {
			return nil, fmt.Errorf("history line %q: switch point: %w", line, err)
		}
		history = append(history, TimelineSwitch{Timeline: uint32(tl), LSN: lsn})
	}
	return history, s.Err()
}

// LatestFrom is the timeline a recovery starting on timeline tl ends on:
// the last of tl+1, tl+2, … whose history file the archive holds, with no
// gap.
func (h Histories) LatestFrom(tl uint32) uint32 {
	for {
		if _, ok := h[tl+1]; !ok {
			return tl
		}
		tl++
	}
}

// onHistoryOf tells whether base backup b, consistent at end, lies on
// the history of timeline latest: on it, or on an ancestor that latest's
// history left only after end.
func (h Histories) onHistoryOf(b BackupInfo, end uint64, latest uint32) bool {
	if uint32(b.Timeline) == latest {
		return true
	}
	for _, s := range h[latest] {
		if s.Timeline == uint32(b.Timeline) {
			return end <= s.LSN
		}
	}
	return false
}

// OnLatestTimeline keeps the base backups (oldest first) from which a
// recovery reaches the archive's latest timeline, and says why none is
// when none is; a backup named by target that is not among them is
// refused, naming the field.
func (h Histories) OnLatestTimeline(backups []BackupInfo, target Target, lsnOf func(string) uint64) ([]BackupInfo, error) {
	var kept []BackupInfo
	var off []string
	for _, b := range backups {
		latest := h.LatestFrom(uint32(b.Timeline))
		if h.onHistoryOf(b, lsnOf(b.EndLSN), latest) {
			kept = append(kept, b)
			continue
		}
		why := fmt.Sprintf("base backup %s is on timeline %d up to %s, and the archive's latest timeline %d does not descend from it there (its history: %s)",
			b.ID, b.Timeline, b.EndLSN, latest, h.describe(latest))
		if target.Backup == b.ID {
			return nil, fmt.Errorf("spec.bootstrap.fromBackup.name: %s: recovery follows the latest timeline, and could not start from it", why)
		}
		off = append(off, why)
	}
	if len(kept) == 0 && len(off) > 0 {
		return nil, fmt.Errorf("spec.bootstrap.fromBackup: no base backup lies on the history of the timeline the recovery follows: %s", strings.Join(off, "; "))
	}
	return kept, nil
}

// describe is timeline tl's history, for messages.
func (h Histories) describe(tl uint32) string {
	history, ok := h[tl]
	if !ok {
		if tl == 1 {
			return "timeline 1 has none"
		}
		return fmt.Sprintf("the archive holds no %08X.history", tl)
	}
	parts := make([]string, 0, len(history))
	for _, s := range history {
		parts = append(parts, fmt.Sprintf("timeline %d until %X/%X", s.Timeline, uint32(s.LSN>>32), uint32(s.LSN)))
	}
	return strings.Join(parts, ", then ")
}

// ReadHistories reads every timeline history file the archive holds.
func (c *Client) ReadHistories(ctx context.Context, lsnOf func(string) (uint64, error)) (Histories, error) {
	names, err := c.ArchivedWAL(ctx)
	if err != nil {
		return nil, err
	}
	h := Histories{}
	for _, name := range names {
		if !strings.HasSuffix(name, ".history") {
			continue
		}
		tl, err := strconv.ParseUint(strings.TrimSuffix(name, ".history"), 16, 32)
		if err != nil {
			continue
		}
		data, err := c.readWAL(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if h[uint32(tl)], err = ParseHistory(data, lsnOf); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return h, nil
}

// readWAL is the content of the archived WAL file name, decompressed.
func (c *Client) readWAL(ctx context.Context, name string) ([]byte, error) {
	object, err := walObject(name)
	if err != nil {
		return nil, err
	}
	data, err := c.getAll(ctx, object+gzSuffix)
	if err == nil {
		if data, err = decompress(data); err != nil {
			return nil, fmt.Errorf("decompress %s: %w", name, err)
		}
		return data, nil
	}
	if errors.Is(err, ErrNotFound) {
		return c.getAll(ctx, object)
	}
	return nil, err
}

// ContinuityBreaks are what the archive lacks for a recovery to follow its
// latest timeline from the first segment archived to the last: a history
// file of a timeline with segments, a segment of a timeline on the latest
// one's history between its first and where the next timeline left it
// (the switch point's segment itself is the next timeline's), a next
// timeline that does not start at that segment, and a gap inside the
// latest timeline.
func ContinuityBreaks(names []string, histories Histories, segSize uint64) []string {
	segments := map[uint32]map[uint64]bool{}
	for _, n := range names {
		if !IsSegment(n) {
			continue
		}
		tl, _ := strconv.ParseUint(n[:8], 16, 32)
		log, _ := strconv.ParseUint(n[8:16], 16, 32)
		seg, _ := strconv.ParseUint(n[16:], 16, 32)
		if segments[uint32(tl)] == nil {
			segments[uint32(tl)] = map[uint64]bool{}
		}
		segments[uint32(tl)][log*(0x100000000/segSize)+seg] = true
	}
	var breaks []string
	var latest uint32
	for tl := range segments {
		latest = max(latest, tl)
		if _, ok := histories[tl]; tl > 1 && !ok {
			breaks = append(breaks, fmt.Sprintf("no %08X.history, though the archive holds segments of timeline %d", tl, tl))
		}
	}
	first := func(tl uint32) (uint64, bool) {
		lowest, ok := ^uint64(0), false
		for s := range segments[tl] {
			lowest, ok = min(lowest, s), true
		}
		return lowest, ok
	}
	name := func(tl uint32, s uint64) string { return SegmentName(tl, s, segSize) }
	// Along the latest timeline's history: each timeline from where the
	// one before left off to the segment where the next one took over,
	// the switch point's (that segment of the old timeline is only
	// .partial); the latest to its last segment archived.
	path := append(append([]TimelineSwitch(nil), histories[latest]...), TimelineSwitch{Timeline: latest})
	var from uint64
	for i, step := range path {
		lowest, ok := first(step.Timeline)
		if i == 0 {
			from = lowest
		}
		end := from
		for s := range segments[step.Timeline] {
			end = max(end, s)
		}
		if i < len(path)-1 {
			end = step.LSN/segSize - 1
			if step.LSN/segSize == from {
				// It ended in the segment it began in: nothing of it
				// but .partial.
				continue
			}
		}
		if !ok {
			breaks = append(breaks, fmt.Sprintf("no segment of timeline %d, which the latest timeline's history goes through", step.Timeline))
		} else if lowest > from {
			breaks = append(breaks, fmt.Sprintf("timeline %d starts at %s, not at %s where the timeline before it left off", step.Timeline, name(step.Timeline, lowest), name(step.Timeline, from)))
		}
		for s := from; ok && s <= end; s++ {
			if !segments[step.Timeline][s] && (lowest <= from || s >= lowest) {
				breaks = append(breaks, "missing "+name(step.Timeline, s))
			}
		}
		if i < len(path)-1 {
			from = step.LSN / segSize
		}
	}
	sort.Strings(breaks)
	return breaks
}
