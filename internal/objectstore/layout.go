package objectstore

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

const (
	walDir  = "wals/"
	baseDir = "base/"
	// gzSuffix marks a compressed object.
	gzSuffix = ".gz"
)

// segmentName matches a WAL segment's file name: timeline, log and
// segment, eight hexadecimal digits each.
var segmentName = regexp.MustCompile(`^[0-9A-F]{24}$`)

// walName is what the archive may hold: a segment, a partial segment, a
// timeline's history or a backup's history file.
var walName = regexp.MustCompile(`^([0-9A-F]{24}(\.partial|\.[0-9A-F]{8}\.backup)?|[0-9A-F]{8}\.history)$`)

// IsSegment tells a WAL segment's name from a history or backup file's.
func IsSegment(name string) bool { return segmentName.MatchString(name) }

// walObject is the object name of the WAL file name (without the
// compression suffix): segments grouped by timeline and log, so that a
// listing of one stays short; the other files beside them.
func walObject(name string) (string, error) {
	if !walName.MatchString(name) {
		return "", fmt.Errorf("%q is not the name of a WAL segment or history file", name)
	}
	if len(name) >= 24 && !strings.HasSuffix(name, ".history") {
		return walDir + name[:16] + "/" + name, nil
	}
	return walDir + name, nil
}

// walFileOf is the WAL file name of an object name, "" when it is none.
func walFileOf(object string) string {
	name := strings.TrimSuffix(path.Base(object), gzSuffix)
	if !strings.HasPrefix(object, walDir) || !walName.MatchString(name) {
		return ""
	}
	return name
}

// backupRecord and backupData are the objects of base backup id.
func backupRecord(id string) string { return baseDir + id + "/backup.json" }
func backupData(id string, compressed bool) string {
	if compressed {
		return baseDir + id + "/data.tar" + gzSuffix
	}
	return baseDir + id + "/data.tar"
}

// backupID matches the ID of a base backup: it names objects, so only
// what is safe in a key.
var backupID = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// SegmentsBetween are the names of the segments of timeline tl that hold
// the WAL from start to end (inclusive), for a segment size: what a base
// backup needs to be consistent.
func SegmentsBetween(tl uint32, start, end uint64, segSize uint64) []string {
	if end < start || segSize == 0 {
		return nil
	}
	var names []string
	for seg := start / segSize; seg <= end/segSize; seg++ {
		names = append(names, SegmentName(tl, seg, segSize))
	}
	return names
}

// SegmentName is the file name of segment number seg (LSN / segSize) of
// timeline tl.
func SegmentName(tl uint32, seg, segSize uint64) string {
	perLog := uint64(0x100000000) / segSize
	return fmt.Sprintf("%08X%08X%08X", tl, seg/perLog, seg%perLog)
}
