package instance

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
)

// Memory and WAL settings sized from the cluster's spec, as an experienced
// DBA (and pgtune, and other operators) sizes them: PostgreSQL's own
// defaults (128MB of shared buffers, 4MB per sort, 1GB of WAL between
// checkpoints) fit neither a container of 256Mi, which they can push past
// its limit, nor one of 16Gi, which they leave mostly idle.
// spec.parameters overrides each; docs/postgrescluster.md says why each is
// what it is.

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
	// defaultMaxConnections is PostgreSQL's max_connections, which work_mem
	// is shared among when the spec does not set it.
	defaultMaxConnections = 100
	// maxMaintenanceWorkMem is where more memory for VACUUM and CREATE
	// INDEX stops helping (autovacuum ignores more than 1GB).
	maxMaintenanceWorkMem = 2 * gib
	// minMaxWALSize and maxMaxWALSize bound max_wal_size: two segments at
	// least, and no more WAL to replay after a crash than a few minutes'
	// worth.
	minMaxWALSize = 64 * mib
	maxMaxWALSize = 8 * gib
	// defaultMinWALSize is PostgreSQL's min_wal_size.
	defaultMinWALSize = 80 * mib
)

// sizedParameters are the defaults sized from spec.resources' memory (its
// limit, else its request) and spec.storage.size; without a memory figure
// the memory settings keep PostgreSQL's defaults. Parameters the spec sets
// are left out: the user's value wins.
func sizedParameters(spec v1alpha1.PostgresClusterSpec) map[string]string {
	out := map[string]string{
		// WAL full-page images compressed: less to write, stream and
		// archive, for some CPU; pglz, which every build of PostgreSQL has.
		"wal_compression": "on",
	}
	// WAL kept between checkpoints: an eighth of the volume, which holds
	// the data too, and with max_slot_wal_keep_size (a quarter) WAL for
	// lost standbys.
	maxWAL := clamp(spec.Storage.Size.Value()/8, minMaxWALSize, maxMaxWALSize)
	out["max_wal_size"] = megabytes(maxWAL)
	out["min_wal_size"] = megabytes(min(defaultMinWALSize, maxWAL/2))

	if memory := memoryOf(spec.Resources); memory > 0 {
		// A quarter for PostgreSQL's own cache; the kernel's page cache,
		// which the rest mostly is, holds what it evicts.
		shared := max(memory/4, 16*mib)
		out["shared_buffers"] = megabytes(shared)
		if own, ok := parseMemory(parameterValue(spec.Parameters, "shared_buffers"), blockSize); ok {
			// The user's shared buffers are what work_mem shares the rest
			// with.
			shared = own
		}
		out["effective_cache_size"] = megabytes(memory * 3 / 4)
		out["maintenance_work_mem"] = megabytes(clamp(memory/16, 16*mib, maxMaintenanceWorkMem))
		// What is left after the shared buffers, over every connection
		// running a few sorts or hashes at once, so that a busy instance
		// stays within its limit.
		connections := int64(defaultMaxConnections)
		if n, err := strconv.ParseInt(parameterValue(spec.Parameters, "max_connections"), 10, 64); err == nil && n > 0 {
			connections = n
		}
		out["work_mem"] = kilobytes(max((memory-shared)/(connections*3), mib))
	}
	for name := range out {
		if setsParameter(spec.Parameters, name) {
			delete(out, name)
		}
	}
	return out
}

// memoryOf is the container's memory limit, else its request; 0 for none.
func memoryOf(r *corev1.ResourceRequirements) int64 {
	if r == nil {
		return 0
	}
	if q, ok := r.Limits[corev1.ResourceMemory]; ok && !q.IsZero() {
		return q.Value()
	}
	if q, ok := r.Requests[corev1.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}

// parameterValue is the spec's value of name, compared without case as
// PostgreSQL does; "" when it sets none.
func parameterValue(params map[string]string, name string) string {
	for k, v := range params {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// blockSize is the unit of shared_buffers given without one: PostgreSQL's
// page.
const blockSize = 8 << 10

// memoryUnits are PostgreSQL's units of memory settings, which are case
// sensitive.
var memoryUnits = map[string]int64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}

// parseMemory reads a memory setting as PostgreSQL does: an integer with
// an optional unit, else in units of unit; false for what it cannot read,
// which the parameters' own check refuses.
func parseMemory(value string, unit int64) (int64, bool) {
	value = strings.TrimSpace(strings.Trim(strings.TrimSpace(value), "'"))
	digits := strings.TrimRightFunc(value, func(r rune) bool { return r < '0' || r > '9' })
	n, err := strconv.ParseInt(strings.TrimSpace(digits), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if suffix := strings.TrimSpace(value[len(digits):]); suffix != "" {
		var known bool
		if unit, known = memoryUnits[suffix]; !known {
			return 0, false
		}
	}
	return n * unit, true
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

func megabytes(b int64) string { return fmt.Sprintf("%dMB", b/mib) }

func kilobytes(b int64) string { return fmt.Sprintf("%dkB", b/1024) }
