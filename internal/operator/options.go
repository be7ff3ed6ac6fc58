// Package operator wires the platform operator together: command-line
// options, logging, the registry of controllers and the choice among them
// (--controllers), health probes served from the start, the start-up checks
// (the API server, the served APIs, the permissions of the generated
// roles), and the controller manager with its merged cache, metrics and
// leader election fenced on the lease.
package operator

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"example.com/platform-operator/internal/platform"
)

// Options are the settings of one run of the operator.
type Options struct {
	// Kubeconfig is the path given with --kubeconfig, or "".
	Kubeconfig string
	// Namespaces are the namespaces watched; empty means all.
	Namespaces []string

	Verbose   bool
	LogFormat string // "json" or "text"

	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string

	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves net/http/pprof when set; "" or "0" is off.
	PprofBindAddress string

	// Controllers is --controllers as given: names, "*" and "-name",
	// resolved against the registry by selectControllers.
	Controllers []string

	MaxConcurrentReconciles int
	// KubeAPIQPS is the client-side rate limit of requests to the API
	// server, NoClientRateLimit for none (the default); KubeAPIBurst
	// applies with a limit only.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// KubeAPICompression asks the API server to gzip its responses, watch
	// streams included (--kube-api-compression; off by default).
	KubeAPICompression bool
	ClusterDomain      string
	OperatorImage      string

	ShowVersion bool
}

// Defaults of the request budget, chosen from the benchmark (test/bench;
// the figures are in docs/performance.md). With few workers and a
// client-side rate limit the operator's workers spend a burst waiting on
// their requests, one after the other, and the control plane does less
// than it could; with 16 workers and no client-side limit the control
// plane's CPU, not the operator, bounds a burst.
// API Priority and Fairness (on by default since Kubernetes 1.20, GA in
// 1.29) protects the API server, which answers 429 with Retry-After when
// it is busy; controller-runtime's own configuration turns the client-side
// limit off by default for the same reason.
const (
	DefaultMaxConcurrentReconciles = 16
	// NoClientRateLimit is client-go's QPS for "no client-side rate
	// limiter".
	NoClientRateLimit = -1
)

// inClusterEnv is set in every pod; its presence means "running in a
// cluster", as the tutorial's operator checks.
const inClusterEnv = "KUBERNETES_SERVICE_HOST"

// namespaceList collects a repeatable --namespace flag.
type namespaceList []string

func (n *namespaceList) String() string { return strings.Join(*n, ",") }

func (n *namespaceList) Set(value string) error {
	for ns := range strings.SplitSeq(value, ",") {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if !slices.Contains(*n, ns) {
			*n = append(*n, ns)
		}
	}
	return nil
}

// ParseOptions reads the command line. getenv supplies the environment, so
// that defaults that depend on it (JSON logs in a cluster, the pod's
// namespace) can be tested.
func ParseOptions(args []string, getenv func(string) string, usage io.Writer) (Options, error) {
	inCluster := getenv(inClusterEnv) != ""
	defaultFormat := "text"
	if inCluster {
		defaultFormat = "json"
	}

	var opts Options
	var namespaces namespaceList
	var allNamespaces bool
	var controllers []string
	fs := flag.NewFlagSet(platform.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path of a kubeconfig; default: in-cluster configuration when $KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config")
	fs.Var(&namespaces, "namespace", "watch only this namespace; repeat the flag, or separate names with commas, for several")
	fs.BoolVar(&allNamespaces, "all-namespaces", false, "watch every namespace (the default when no --namespace is given)")
	fs.BoolVar(&opts.Verbose, "verbose", false, "log the detail of every reconcile")
	fs.StringVar(&opts.LogFormat, "log-format", defaultFormat, "log format: json or text (default json in a cluster, else text)")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles; it releases the Lease on shutdown, and exits (for its pod to restart) when it loses it")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", platform.LeaseName, "name of the leader election Lease")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", getenv("POD_NAMESPACE"), "namespace of the leader election Lease (default $POD_NAMESPACE, or the pod's own namespace in a cluster)")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8443", "address of the HTTPS /metrics endpoint, which requires a token allowed to get /metrics; 0 disables it")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz (alive) and /readyz (ready, or why not), served from the start; 0 disables them")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "", "address of Go's /debug/pprof/ profiles, for example 127.0.0.1:8082; off when empty or 0 (the default)")
	fs.Func("controllers", "controllers to run, comma-separated: * for every known one (the default), a name to require one, -name to leave one out; known: "+strings.Join(controllerNames(registry), ", "), func(value string) error {
		controllers = append(controllers, strings.Split(value, ",")...)
		return nil
	})
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "objects reconciled at once by each controller. A reconcile mostly waits for the API server (a create, a status write), so workers are what lets the operator keep the API server busy when many objects change at once; reconciles of one object never overlap")
	fs.Float64Var(&opts.KubeAPIQPS, "kube-api-qps", 0, "sustained requests a second to the API server; 0 or less (the default): no client-side limit, the API server's Priority and Fairness protects it and answers 429 with Retry-After, which the client obeys. Set a limit on a shared API server without Priority and Fairness")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", 0, "requests allowed above --kube-api-qps in a burst, with a limit (default: twice --kube-api-qps)")
	fs.BoolVar(&opts.KubeAPICompression, "kube-api-compression", false, "ask the API server to gzip its responses, watch streams included: less traffic for more CPU on both sides; worth it only over a slow link to the API server")
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", "cluster.local", "DNS domain of the cluster, for the in-cluster URLs in status.url")
	fs.StringVar(&opts.OperatorImage, "postgres-instance-image", "", "image whose /platform-operator runs in the pods made for PostgresClusters: their instance managers and BackupJobs' base backups (default: $"+platform.ImageEnv+", which deploy/ sets to the operator's own image)")
	// Each kind's own flags, checked once parsed.
	var validators []func() error
	for _, d := range registry {
		if d.Flags != nil {
			if validate := d.Flags(fs); validate != nil {
				validators = append(validators, validate)
			}
		}
	}
	// Kept so that command lines written for earlier versions still start.
	fs.Bool("wait-for-api-server", true, "deprecated, no effect: the operator always waits for the API server")
	fs.BoolVar(&opts.ShowVersion, "version", false, "print the version and exit")
	// The flag package prints the usage on every error; a bad flag gets one
	// line instead, and --help the whole usage.
	fs.Usage = func() {}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(usage, "Usage: "+platform.Name+" [flags]\n       "+platform.Name+" version\n\nRuns the controllers of the platform's kinds (see --controllers).\n\nFlags:")
			fs.SetOutput(usage)
			fs.PrintDefaults()
		}
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q: this command takes only flags", fs.Arg(0))
	}
	opts.Namespaces = namespaces
	opts.Controllers = controllers
	if opts.Controllers == nil {
		opts.Controllers = []string{"*"}
	}
	if _, err := selectControllers(registry, opts.Controllers); err != nil {
		return opts, err
	}
	if allNamespaces && len(opts.Namespaces) > 0 {
		return opts, errors.New("--all-namespaces and --namespace exclude each other: choose one")
	}
	if opts.LogFormat != "json" && opts.LogFormat != "text" {
		return opts, fmt.Errorf("--log-format must be json or text, not %q", opts.LogFormat)
	}
	if opts.LeaderElect && opts.LeaderElectionNamespace == "" && !inCluster {
		return opts, errors.New("--leader-elect needs --leader-election-namespace (or $POD_NAMESPACE) outside a cluster")
	}
	for _, validate := range validators {
		if err := validate(); err != nil {
			return opts, err
		}
	}
	if opts.MaxConcurrentReconciles < 1 {
		return opts, fmt.Errorf("--max-concurrent-reconciles must be at least 1, not %d", opts.MaxConcurrentReconciles)
	}
	switch {
	case opts.KubeAPIQPS <= 0:
		// client-go's way of saying "no client-side rate limiter"; 0 would
		// mean its default of 5 requests a second.
		opts.KubeAPIQPS, opts.KubeAPIBurst = NoClientRateLimit, 0
	case opts.KubeAPIBurst < 0:
		return opts, fmt.Errorf("--kube-api-burst must not be negative, not %d", opts.KubeAPIBurst)
	case opts.KubeAPIBurst == 0:
		opts.KubeAPIBurst = max(1, int(2*opts.KubeAPIQPS))
	}
	return opts, nil
}

// InCluster reports whether the process runs in a pod.
func InCluster() bool { return os.Getenv(inClusterEnv) != "" }
