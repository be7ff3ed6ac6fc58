package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/metrics"
)

// ErrLeaseLost is returned by Run when this process lost its leader
// election lease: it has stopped reconciling and must start afresh to
// rejoin the election.
var ErrLeaseLost = errors.New("lost the leader election lease")

// Version is the operator's version, set at build time with
// -ldflags "-X example.com/platform-operator/internal/operator.Version=...".
var Version = "dev"

// NewLogger returns the operator's structured logger: JSON lines in a
// cluster, readable text on a terminal; V(1) detail with --verbose.
func NewLogger(opts Options, out io.Writer) logr.Logger {
	level := zapcore.InfoLevel
	if opts.Verbose {
		level = zapcore.DebugLevel
	}
	encoder := zap.ConsoleEncoder()
	if opts.LogFormat == "json" {
		encoder = zap.JSONEncoder()
	}
	return zap.New(zap.WriteTo(out), encoder, zap.Level(level))
}

// RESTConfig finds the cluster: --kubeconfig when given, the pod's own
// ServiceAccount in a cluster, else $KUBECONFIG or ~/.kube/config.
func RESTConfig(opts Options) (*rest.Config, error) {
	var config *rest.Config
	var err error
	switch {
	case opts.Kubeconfig != "":
		config, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load --kubeconfig %s: %w", opts.Kubeconfig, err)
		}
	case InCluster():
		config, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("load in-cluster configuration: %w", err)
		}
	default:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		config, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("no cluster to talk to: pass --kubeconfig, set $KUBECONFIG, or run in a cluster (%w)", err)
		}
	}
	config.QPS = float32(opts.KubeAPIQPS)
	config.Burst = opts.KubeAPIBurst
	config.UserAgent = "platform-operator/" + Version
	return config, nil
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, opts Options, config *rest.Config, logger logr.Logger) error {
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	log := logger.WithName("setup")

	// No preflight request may hang: each gets 10 s.
	preflightConfig := rest.CopyConfig(config)
	preflightConfig.Timeout = 10 * time.Second
	var clientset preflightClients
	var err error
	if clientset.discovery, err = discovery.NewDiscoveryClientForConfig(preflightConfig); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if clientset.authorization, err = authorizationv1client.NewForConfig(preflightConfig); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if err := preflight(ctx, clientset, config.Host, opts, log); err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(websitev1.AddToScheme(scheme))

	var guard *LeaseGuard
	if opts.LeaderElect {
		lock, err := newLeaseLock(config, scheme, opts.LeaderElectionNamespace, opts.LeaderElectionID)
		if err != nil {
			return fmt.Errorf("set up leader election: %w", err)
		}
		guard = NewLeaseGuard(lock, clock.RealClock{})
	}

	metricsFilter := filters.WithAuthenticationAndAuthorization
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme: scheme,
		Logger: logger,
		Cache:  website.CacheOptions(opts.Namespaces),
		Metrics: metricsserver.Options{
			BindAddress:    opts.MetricsBindAddress,
			SecureServing:  true,
			FilterProvider: metricsFilter,
		},
		HealthProbeBindAddress:              opts.HealthProbeBindAddress,
		LeaderElection:                      opts.LeaderElect,
		LeaderElectionResourceLockInterface: leaderLock(guard),
		LeaseDuration:                       ptr.To(leaseDuration),
		RenewDeadline:                       ptr.To(renewDeadline),
		LeaderElectionReleaseOnCancel:       true,
		GracefulShutdownTimeout:             ptr.To(20 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("create controller manager: %w", err)
	}

	tracker, err := metrics.Register(ctrlmetrics.Registry, mgr.GetCache(), clock.RealClock{})
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	// With leader election, writes are fenced on the lease: see LeaseGuard.
	var writer client.Client = mgr.GetClient()
	if guard != nil {
		writer = &fencedClient{Client: writer, guard: guard}
	}
	reconciler := &website.WebsiteReconciler{
		Client:                  writer,
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(website.ManagerName),
		ClusterDomain:           opts.ClusterDomain,
		Metrics:                 tracker,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Website controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr.GetCache())); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}

	scope := "all namespaces"
	if len(opts.Namespaces) > 0 {
		scope = fmt.Sprintf("namespaces %v", opts.Namespaces)
	}
	log.Info("Starting platform operator", "version", Version, "watching", scope,
		"leaderElection", opts.LeaderElect, "apiServer", config.Host)
	if err := mgr.Start(ctx); err != nil {
		// controller-runtime's words for it; it stops every controller.
		if strings.Contains(err.Error(), "leader election lost") {
			return fmt.Errorf("%w: %v", ErrLeaseLost, err)
		}
		return fmt.Errorf("run controller manager: %w", err)
	}
	return nil
}

// cachesSynced makes /readyz answer 200 once the informers have listed
// everything, so that a rollout of the operator waits for a replica that
// knows the cluster.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("caches not synced yet")
		}
		return nil
	}
}

func ptrTo[T any](v T) *T { return &v }

// leaderLock is the guard as a lock, or nil without leader election (a nil
// *LeaseGuard in the interface would not be nil).
func leaderLock(guard *LeaseGuard) resourcelock.Interface {
	if guard == nil {
		return nil
	}
	return guard
}

// The operator's own namespace holds its leader election Lease and the events
// about it; the metrics endpoint asks the API server to authenticate and
// authorize each scrape.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=platform-operator-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=platform-operator-system
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
