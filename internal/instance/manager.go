package instance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// tickInterval is how often the manager looks at its instance and its
// cluster when nothing wakes it earlier.
const tickInterval = 500 * time.Millisecond

// apiFreshFor is how long a successful request to the API server makes the
// manager's view of its cluster count as current.
const apiFreshFor = 10 * time.Second

// fenceMargin is how long before its lease lapses a primary that cannot
// renew it stops PostgreSQL: the new primary can take the lease only once
// it lapsed, by then this one accepts no write.
const fenceMargin = 3 * time.Second

// Manager runs one instance.
type Manager struct {
	opts  Options
	log   logr.Logger
	clock clock.WithTicker

	client client.Client
	cache  cache.Cache
	// restConfig reaches the API server, for the reviews of scrapes.
	restConfig *rest.Config
	pg         *postgres.Instance
	proc       *postgres.Process
	// stopping is true while the manager stops postgres on purpose, so
	// that its exit is not taken for a crash.
	stopping bool

	wake chan struct{}

	lease    leaseKeeper
	secrets  secretReader
	reporter reporter
	// lastAPI is when a request to the API server last succeeded (unix
	// nanoseconds).
	lastAPI atomic.Int64
	// selfFenced is true once the manager stopped its primary for want of
	// the lease; pid is postgres's, for the fencing.
	selfFenced atomic.Bool
	pid        atomic.Int64
	// watchdog fences PostgreSQL should the manager stop without dying;
	// nil when Options.WatchdogCommand is. armedFor and exemptUntil are
	// keepLease's alone: what the watchdog was last armed with, and until
	// when the primary may run on past its time to fence by, on its
	// standbys' word.
	watchdog    *watchdog
	armedFor    watchdogArming
	exemptUntil time.Time
	// expectedStandbys are the instances that should stream from this
	// instance while it is the primary, by application name.
	expectedStandbys atomic.Pointer[[]string]
	// following is the primary the standby configuration names.
	following string
	// detachedUnder is the promotion epoch under which the standby
	// detached from its primary for an election; 0 for none.
	detachedUnder int64
	// notStreamingSince is since when a running standby has not streamed.
	notStreamingSince time.Time
	// lastRead is the last good reading of the running PostgreSQL.
	lastRead lastRead
	// slotsFor and slotsAt: the standbys a primary last made its
	// replication slots for, and when.
	slotsFor string
	slotsAt  time.Time
	// handedOver is the shutdown position of this instance when it stepped
	// down for a switchover, reported for its successor.
	handedOver postgres.LSN
	// archiveConfigWritten is what archiveConfigFile last got;
	// archivingChecked is set once checkArchiving looked.
	archiveConfigWritten []byte
	archivingChecked     bool
	// archiving is the last reading of the archiver, and when it was
	// made: archivingReport reads it again at most every
	// archivingReadInterval.
	archiving   *v1alpha1.PostgresArchivingStatus
	archivingAt time.Time
	// catalog reads the store's base backups and applies retention.
	catalog catalogKeeper
	// restoreHold is the hold of this instance's restore on a base backup
	// of its source's store, while it recovers (restorehold.go).
	restoreHold restoreHoldTender
	// recoveryStopped is why PostgreSQL last exited during an archive
	// recovery (its FATAL message), at recoveryStoppedAt.
	recoveryStopped   string
	recoveryStoppedAt time.Time
	// settings are those last written to the configuration.
	settings *postgres.Settings
	// tls are the files of the server certificate once syncTLS wrote them,
	// serverCert what they hold.
	tls        *postgres.TLS
	serverCert serverCert
	// applied maps a role to the resourceVersion of the Secret whose
	// password it has in the database.
	applied map[string]string
	// lastFailure is the last step failure logged: a step that fails the
	// same way every tick (spec.parameters refused) is logged once.
	lastFailure string

	ready atomic.Bool
}

// Run runs the instance until ctx ends (SIGTERM), then stops PostgreSQL
// cleanly and releases the primary's lease if it holds it.
func Run(ctx context.Context, opts Options, log logr.Logger) error {
	m, err := newManager(ctx, opts, log)
	if err != nil {
		return err
	}
	if opts.StatusAddress != "" {
		go serveStatus(ctx, opts.StatusAddress, &m.ready, log)
	}
	if opts.MetricsAddress != "" {
		collector := newPGCollector(ctx, m.metricsConnection, log.WithName("metrics"))
		go serveMetrics(ctx, opts.MetricsAddress, m.restConfig, collector, log)
	}
	if len(opts.WatchdogCommand) > 0 {
		if m.watchdog, err = startWatchdog(ctx, opts.WatchdogCommand, opts.SocketDir); err != nil {
			return err
		}
	}
	go m.keepLease(ctx)
	return m.loop(ctx)
}

func newManager(ctx context.Context, opts Options, log logr.Logger) (*Manager, error) {
	config := opts.Config
	if config == nil {
		var err error
		if config, err = restConfig(opts.Kubeconfig); err != nil {
			return nil, err
		}
	}
	config = rest.CopyConfig(config)
	config.UserAgent = "platform-operator-instance/" + opts.PodName
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client of the API server: %w", err)
	}
	leaseName := pgspec.LeaseName(opts.ClusterName)
	// The Role grants reads of the cluster and its Lease by name only: a
	// list or watch must ask for that name.
	informers, err := cache.New(config, cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.PostgresCluster{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.ClusterName)},
			&coordinationv1.Lease{}:     {Field: fields.OneTermEqualSelector("metadata.name", leaseName)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cache of the cluster: %w", err)
	}
	m := &Manager{
		opts: opts, log: log, clock: clock.RealClock{}, client: c, cache: informers, restConfig: config,
		wake:    make(chan struct{}, 1),
		applied: map[string]string{},
		pg: &postgres.Instance{
			Name: opts.PodName, BinDir: opts.BinDir, DataDir: opts.PGData, SocketDir: opts.SocketDir,
			ListenAddress: opts.ListenAddress, Port: pgspec.Port, Log: log.WithName("postgres"),
			Credential: opts.Credential,
		},
	}
	if opts.AddressOf != nil {
		_, m.pg.Port = opts.AddressOf(opts.PodName)
	}
	m.lease = leaseKeeper{client: c, key: types.NamespacedName{Namespace: opts.Namespace, Name: leaseName}, holder: opts.PodName,
		duration: opts.LeaseDuration, clock: m.clock}
	m.secrets = secretReader{client: c, namespace: opts.Namespace}
	m.reporter = reporter{client: c, pod: types.NamespacedName{Namespace: opts.Namespace, Name: opts.PodName}, clock: m.clock}
	for _, obj := range []client.Object{&v1alpha1.PostgresCluster{}, &coordinationv1.Lease{}} {
		informer, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { m.poke() },
			UpdateFunc: func(any, any) { m.poke() },
			DeleteFunc: func(any) { m.poke() },
		}); err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	go func() {
		if err := informers.Start(ctx); err != nil {
			log.Error(err, "The watch of the cluster stopped")
		}
	}()
	return m, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		config, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
		return config, nil
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return config, nil
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// loop acts every tick, or sooner when the cluster or the lease changes,
// until ctx ends.
func (m *Manager) loop(ctx context.Context) error {
	ticker := m.clock.NewTicker(tickInterval)
	defer ticker.Stop()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return m.shutdown()
		case <-ticker.C():
		case <-m.wake:
		}
	}
}

// tick looks once at the instance and the cluster and takes one step.
func (m *Manager) tick(ctx context.Context) {
	now := m.clock.Now()
	pg := m.cluster(ctx)
	if pg != nil {
		if err := m.writeArchiveConfig(pg); err != nil {
			m.log.Error(err, "The object store's configuration is not written")
		}
		m.syncTLS(ctx, pg)
		m.applySettings(pg)
		standbys := standbyNames(pg, m.opts.PodName)
		m.expectedStandbys.Store(&standbys)
	}
	state := m.observe(ctx, now)
	v := m.view(ctx, pg, now)
	l := m.local(state)
	s, why := next(m.opts.PodName, l, v, now)
	if err := m.do(ctx, s, pg, v); err != nil {
		why = fmt.Sprintf("%s: %v", s, err)
		if why != m.lastFailure {
			m.log.Error(err, "Step failed", "step", s.String())
		}
		m.lastFailure = why
	} else {
		m.lastFailure = ""
		if s != stepRun && s != stepWait {
			m.log.Info("Step done", "step", s.String(), "why", why)
		}
	}
	if pg != nil && m.proc != nil && !m.stopping {
		pwCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m.syncPasswords(pwCtx, pg, state)
		m.syncSlots(pwCtx, pg, state, now)
		m.checkArchiving(pwCtx, pg, state)
		m.maybeCatalog(pwCtx, pg, state, now)
		m.tendRestoreHold(pwCtx, state, now)
		cancel()
	}
	state = m.observe(ctx, m.clock.Now())
	m.ready.Store(state.ready)
	m.report(ctx, pg, state, why)
}

// heartbeat is how often the manager reads its cluster from the API server
// itself, when nothing else it did reached the API server: it must know
// whether its view is current.
const heartbeat = 3 * time.Second

// cluster is the PostgresCluster as last watched, or as read from the API
// server when the watch has nothing or the view needs confirming; nil when
// neither has it.
func (m *Manager) cluster(ctx context.Context) *v1alpha1.PostgresCluster {
	key := types.NamespacedName{Namespace: m.opts.Namespace, Name: m.opts.ClusterName}
	pg := &v1alpha1.PostgresCluster{}
	readCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if m.clock.Since(m.lastAPIAt()) < heartbeat && m.cache.Get(readCtx, key, pg) == nil {
		return pg
	}
	if err := m.client.Get(readCtx, key, pg); err != nil {
		if m.cache.Get(readCtx, key, pg) == nil {
			return pg
		}
		return nil
	}
	m.markAPI()
	return pg
}

// markAPI notes a successful request to the API server.
func (m *Manager) markAPI() { m.lastAPI.Store(m.clock.Now().UnixNano()) }

func (m *Manager) lastAPIAt() time.Time { return time.Unix(0, m.lastAPI.Load()) }

// shutdown stops PostgreSQL cleanly and releases the lease: the pod is
// deleted, and a failover must start at once.
func (m *Manager) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var errs []error
	wasPrimary := m.lease.held(m.clock.Now())
	stopped := make(chan error, 1)
	stoppedYet := true
	if m.proc != nil {
		m.stopping = true
		proc := m.proc
		go func() { stopped <- proc.Stop(ctx, postgres.StopFast) }()
		// A fast shutdown ends every session at once and accepts no new
		// one: the lease can go before the shutdown's checkpoint is
		// written, which a pod deleted with a short grace period may not
		// live to see. The successor still promotes only once this server
		// stopped sending it WAL.
		select {
		case err := <-stopped:
			stopped <- err
			if err == nil && wasPrimary {
				m.reportHandover(ctx)
			}
		case <-time.After(releaseAfterStop):
			stoppedYet = false
		}
	} else {
		stopped <- nil
	}
	if m.lease.held(m.clock.Now()) {
		if err := m.lease.release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	err := <-stopped
	if err != nil {
		errs = append(errs, err)
	}
	if err == nil && wasPrimary && !stoppedYet {
		// Late, but the elected standby, waiting fenceGrace, reads it
		// at its next tick and promotes then.
		m.reportHandover(ctx)
	}
	m.proc = nil
	m.log.Info("Stopped")
	return errors.Join(errs...)
}

// releaseAfterStop is how long after asking for a fast shutdown the lease
// is released at the latest: long enough for the postmaster to end every
// session, and for a small database's shutdown checkpoint, whose position
// the primary reports before it lets the lease go (reportHandover).
const releaseAfterStop = 500 * time.Millisecond

// handoverReportTimeout bounds the report of a deleted primary's
// hand-over: the lease waits for it, and a pod deleted with a short grace
// period may not live long.
const handoverReportTimeout = 250 * time.Millisecond

// reportHandover reports where the primary's clean shutdown ended (its
// checkpoint), as a switchover's step-down does, before the lease goes
// when the shutdown ends within releaseAfterStop, else right after:
// the elected standby then knows that the former primary stopped, rather
// than giving it fenceGrace to fence itself, and a standby still streaming
// from it waits to receive everything up to there before it promotes. A
// shutdown that was not clean, or a report that does not go through in
// time, reports nothing: the standby then waits fenceGrace.
func (m *Manager) reportHandover(ctx context.Context) {
	cd, err := m.pg.ControlData(ctx)
	if err != nil || !cd.CleanShutdown() {
		return
	}
	m.handedOver = cd.CheckpointLSN
	r := &v1alpha1.PostgresInstanceReport{Node: m.opts.NodeName, Message: "stopped: the pod is deleted", ShutdownLSN: m.handedOver.String()}
	if last := m.reporter.last; last != nil {
		r.Epoch = last.Epoch
	}
	reportCtx, cancel := context.WithTimeout(ctx, handoverReportTimeout)
	defer cancel()
	if err := m.reporter.send(reportCtx, r); err != nil {
		m.log.Info("The hand-over was not reported: the elected standby waits a moment longer", "error", err.Error())
	}
}

// addressOf is how an instance of the cluster is reached: its DNS name,
// through the headless Service, and PostgreSQL's port.
func (m *Manager) addressOf(instance string) (string, int) {
	if m.opts.AddressOf != nil {
		return m.opts.AddressOf(instance)
	}
	return pgspec.InstanceHost(instance, m.opts.ClusterName, m.opts.Namespace, m.opts.ClusterDomain), pgspec.Port
}
