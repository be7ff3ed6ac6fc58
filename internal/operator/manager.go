package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/operator/domainmetrics"
)

// newManager builds the controller manager for the controllers of p: one
// scheme and one cache for all of them, the metrics endpoint, leader
// election with its write fence, and each controller set up. It serves no
// probes of its own: the operator's probe server answers from the start.
// stop releases what it holds outside the manager.
func newManager(ctx context.Context, config *rest.Config, opts Options, leaseNS string, p plan, logger logr.Logger) (mgr manager.Manager, stop func(), err error) {
	scheme, err := NewScheme(p.run...)
	if err != nil {
		return nil, nil, err
	}
	cacheOpts, err := cacheOptions(scheme, p.run, opts.Namespaces)
	if err != nil {
		return nil, nil, err
	}

	stop = func() {}
	var lock resourcelock.Interface
	if opts.LeaderElect {
		// Every client of the manager writes through the fence, and so do
		// the lock's events; the lock's own client keeps config as given.
		guard := NewLeaseGuard(clock.RealClock{})
		fenced, err := guard.Fence(config)
		if err != nil {
			return nil, nil, err
		}
		inner, stopEvents, err := newLeaseLock(config, fenced, scheme, leaseNS, opts.LeaderElectionID)
		if err != nil {
			return nil, nil, err
		}
		guard.Guard(inner)
		config, lock, stop = fenced, guard, stopEvents
	}

	mgr, err = ctrl.NewManager(config, ctrl.Options{
		Scheme: scheme,
		Logger: logger,
		Cache:  cacheOpts,
		Metrics: metricsserver.Options{
			BindAddress:    opts.MetricsBindAddress,
			SecureServing:  true,
			FilterProvider: metricsAuthFilter,
			HandlerOpts:    []func(*promhttp.HandlerOpts){uncompressedMetrics},
		},
		HealthProbeBindAddress:              "0",
		PprofBindAddress:                    opts.PprofBindAddress,
		LeaderElection:                      opts.LeaderElect,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionID:                    opts.LeaderElectionID,
		LeaseDuration:                       ptr.To(leaseDuration),
		RenewDeadline:                       ptr.To(renewDeadline),
		RetryPeriod:                         ptr.To(retryPeriod),
		// The standby takes over at once after a clean shutdown. A lost
		// lease makes Start return an error, and the process exit.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(20 * time.Second),
	})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("create controller manager: %w", err)
	}

	for _, d := range p.run {
		err := d.Setup(ctx, mgr, controller.SetupOptions{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			ClusterDomain:           opts.ClusterDomain,
			OperatorImage:           opts.OperatorImage,
			Clock:                   clock.RealClock{},
			ServedOptionalAPIs:      p.servedOptional[d.Name],
			PodSecurityVersion:      p.podSecurity,
		})
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("set up controller %s: %w", d.Name, err)
		}
	}
	// The kinds' state at each scrape, read from the cache the controllers
	// share: only the kinds that run, whose informers the cache holds.
	domainmetrics.Register(mgr.GetCache(), controllerNames(p.run))
	return mgr, stop, nil
}

// cachesSynced is ready once the informers have listed everything, so that
// a rollout of the operator waits for a replica that knows the cluster, and
// an object created once the replica is ready is news to its controller,
// not part of the initial list that it goes through at low priority. The
// cache's sync covers the informers that exist when it is asked: see
// warmCache.
func cachesSynced(c cache.Informers) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 200*time.Millisecond)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("caches not synced yet")
		}
		return nil
	}
}

// warmCache creates, before the manager starts, the informers of the types
// the controllers watch. The controllers would create them only when they
// start, after the leader election: until then the cache would call itself
// synced without them, and a standby would take over with nothing listed.
// So every replica lists the controllers' types before it is ready, and a
// standby takes over with its cache warm, at the price of holding the same
// cache as the leader.
func warmCache(ctx context.Context, c cache.Informers, watched []client.Object) error {
	for _, obj := range watched {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("cache of %T: %w", obj, err)
		}
	}
	return nil
}

// watchedObjects are the object types the controllers of p watch through
// the cache: each controller's own kind, the types of its cache settings and
// the optional APIs the cluster serves.
func watchedObjects(mapper meta.RESTMapper, scheme *runtime.Scheme, p plan) ([]client.Object, error) {
	var watched []client.Object
	add := func(gvr schema.GroupVersionResource) error {
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			return fmt.Errorf("kind of %s: %w", gvr, err)
		}
		obj, err := scheme.New(gvk)
		if err != nil {
			return fmt.Errorf("type of %s: %w", gvk, err)
		}
		typed, ok := obj.(client.Object)
		if !ok {
			return fmt.Errorf("%s is not an object type", gvk)
		}
		watched = append(watched, typed)
		return nil
	}
	for _, d := range p.run {
		if err := add(d.Resource); err != nil {
			return nil, err
		}
		if d.Cache != nil {
			for obj := range d.Cache() {
				watched = append(watched, obj)
			}
		}
		for _, gvr := range d.OptionalAPIs {
			if !p.servedOptional[d.Name][gvr] {
				continue
			}
			if err := add(gvr); err != nil {
				return nil, err
			}
		}
	}
	return watched, nil
}

// uncompressedMetrics serves /metrics without compression, even to a
// scraper that accepts gzip. The operator's metrics are tens of KiB, read
// over the cluster's network every scrape interval; compressing them would
// keep a compressor, larger than the page it compresses, in the operator's
// memory, pooled between scrapes.
func uncompressedMetrics(opts *promhttp.HandlerOpts) {
	opts.DisableCompression = true
}
