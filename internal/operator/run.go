package operator

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/discovery"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"example.com/platform-operator/internal/platform"
)

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
	return zap.New(zap.WriteTo(out), encoder, zap.Level(level), zap.RawZapOpts(uberzap.WrapCore(withDeferredFields)))
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
	// In a cluster the API server is a fast link away: gzip would cost the
	// API server and the operator CPU on every watch event for traffic
	// that does not need saving (kube-apiserver's profiles of a burst show
	// it compressing watch streams).
	config.DisableCompression = !opts.KubeAPICompression
	config.UserAgent = platform.Name + "/" + platform.BuildVersion()
	return config, nil
}

// Run runs the operator until ctx ends. It serves its health probes first,
// waits for the API server, decides which controllers run, checks their
// permissions, and starts the manager. An error is one line that names the
// cause and the fix; a lost leader election lease is one, for the process
// to exit and its pod to restart.
func Run(ctx context.Context, opts Options, config *rest.Config, logger logr.Logger) error {
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	log := logger.WithName("setup")

	probes := &probes{}
	probes.starting("starting")
	if opts.HealthProbeBindAddress != "" && opts.HealthProbeBindAddress != "0" {
		stop, err := probes.serve(opts.HealthProbeBindAddress, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	// No start-up request may hang: each gets 10 s. These clients are not
	// fenced: they write nothing.
	startConfig := rest.CopyConfig(config)
	startConfig.Timeout = 10 * time.Second
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(startConfig)
	if err != nil {
		return fmt.Errorf("create discovery client: %w", err)
	}
	authorizationClient, err := authorizationv1client.NewForConfig(startConfig)
	if err != nil {
		return fmt.Errorf("create authorization client: %w", err)
	}
	p, leaseNS, err := preflight(ctx, opts, config.Host, discoveryClient, authorizationClient.SelfSubjectAccessReviews(), probes, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}

	probes.starting("starting the controllers")
	mgr, stop, err := newManager(ctx, config, opts, leaseNS, p, logger)
	if err != nil {
		return err
	}
	defer stop()
	watched, err := watchedObjects(mgr.GetRESTMapper(), mgr.GetScheme(), p)
	if err != nil {
		return err
	}
	if err := warmCache(ctx, mgr.GetCache(), watched); err != nil {
		return err
	}
	probes.running(
		readinessCheck{name: "caches", check: cachesSynced(mgr.GetCache())},
		readinessCheck{name: "api-server", check: apiServerReachable(discoveryClient, config.Host)},
	)

	scope := "all namespaces"
	if len(opts.Namespaces) > 0 {
		scope = fmt.Sprintf("namespaces %v", opts.Namespaces)
	}
	log.Info("Starting platform operator", "version", platform.BuildVersion(), "controllers", controllerNames(p.run),
		"watching", scope, "leaderElection", opts.LeaderElect, "apiServer", config.Host)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("controller manager stopped: %w", err)
	}
	return nil
}
