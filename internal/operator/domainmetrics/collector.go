// Package domainmetrics exports the state of the operator's objects as
// Prometheus gauges, as kube-state-metrics does for the built-in kinds: a
// Website's ready replicas, a BackupJob's last success, a PostgresCluster's
// phase. It reads the manager's cache at each scrape and nothing else, so a
// scrape costs no API call and its figures are never older than the cache.
// docs/operating.md#metrics lists the metrics; the alerts of
// deploy/components/monitoring are written on them.
package domainmetrics

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The kinds, by their controller's name (controller.Descriptor.Name), which
// is also the kind label of platform_operator_resources.
const (
	Website         = "website"
	Tenant          = "tenant"
	BackupJob       = "backupjob"
	PostgresCluster = "postgrescluster"
)

// scrapeTimeout bounds one kind's listing; a cache read never waits on the
// API server, so only a cache still syncing at start could take that long.
const scrapeTimeout = 5 * time.Second

// The kinds list the cache with client.UnsafeDisableDeepCopy: they only
// read the cached objects, and a deep copy of every object at every scrape
// would be garbage that nothing needs.

// kind is what the collector knows of one kind: its metrics and how to read
// them from the cache.
type kind struct {
	descs   []*prometheus.Desc
	collect func(ctx context.Context, r client.Reader, running map[string]bool, emit emitter) error
}

// kinds are the kinds the collector can export, by name.
var kinds = map[string]kind{
	Website:         websiteKind,
	Tenant:          tenantKind,
	BackupJob:       backupJobKind,
	PostgresCluster: postgresClusterKind,
}

// Collector is a prometheus.Collector of the domain metrics of the kinds
// whose controllers run.
type Collector struct {
	mu      sync.Mutex
	reader  client.Reader
	running []string
}

// New returns a Collector of the kinds named in running (controller names;
// others are ignored), read from reader: the manager's cache, whose
// informers of those kinds exist, so that listing creates none.
func New(reader client.Reader, running []string) *Collector {
	c := &Collector{}
	c.set(reader, running)
	return c
}

func (c *Collector) set(reader client.Reader, running []string) {
	var known []string
	for _, name := range running {
		if _, ok := kinds[name]; ok && !slices.Contains(known, name) {
			known = append(known, name)
		}
	}
	slices.Sort(known)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.running = reader, known
}

var (
	global       = &Collector{}
	registerOnce sync.Once
)

// Register makes controller-runtime's registry, which the operator's
// /metrics serves, export the domain metrics of the kinds in running, read
// from reader. A second call (in tests, another manager in the same
// process) replaces what the first set.
func Register(reader client.Reader, running []string) {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(global) })
	global.set(reader, running)
}

// Describe sends the descriptions of every kind's metrics, whether it runs
// or not: the set a registry checks against must not change.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- conditionDesc
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		for _, d := range kinds[name].descs {
			ch <- d
		}
	}
}

// Collect lists each running kind from the cache and sends its gauges. A
// kind that cannot be listed is reported as an invalid metric, which fails
// the scrape with the cause, as the kit's platform_operator_resources does.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, running := c.reader, c.running
	c.mu.Unlock()
	if reader == nil {
		return
	}
	set := map[string]bool{}
	for _, name := range running {
		set[name] = true
	}
	emit := emitter{ch: ch}
	for _, name := range running {
		k := kinds[name]
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		err := k.collect(ctx, reader, set, emit)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(k.descs[0], err)
		}
	}
}

// emitter sends gauges.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) gauge(desc *prometheus.Desc, value float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, labels...)
}

// Exports says whether the collector has metrics of the kind whose
// controller is named name.
func Exports(name string) bool {
	_, ok := kinds[name]
	return ok
}
