// Package operator wires the platform operator together: command-line
// options, logging, preflight checks, and the controller manager with its
// cache, metrics, health probes and leader election.
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

	MaxConcurrentReconciles int
	KubeAPIQPS              float64
	KubeAPIBurst            int
	ClusterDomain           string

	// WaitForAPIServer makes the start wait, with backoff, for an API
	// server that cannot be reached, instead of failing at once.
	WaitForAPIServer bool

	ShowVersion bool
}

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
	fs := flag.NewFlagSet("platform-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path of a kubeconfig; default: in-cluster configuration when $KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config")
	fs.Var(&namespaces, "namespace", "watch only this namespace; repeat the flag, or separate names with commas, for several")
	fs.BoolVar(&allNamespaces, "all-namespaces", false, "watch every namespace (the default when no --namespace is given)")
	fs.BoolVar(&opts.Verbose, "verbose", false, "log the detail of every reconcile")
	fs.StringVar(&opts.LogFormat, "log-format", defaultFormat, "log format: json or text (default json in a cluster, else text)")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles, and it releases the Lease on shutdown")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", "platform-operator.example.com", "name of the leader election Lease")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", getenv("POD_NAMESPACE"), "namespace of the leader election Lease (default $POD_NAMESPACE, or the pod's own namespace in a cluster)")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8443", "address of the HTTPS /metrics endpoint, which requires a token allowed to get /metrics; 0 disables it")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables them")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "Websites reconciled at once")
	fs.Float64Var(&opts.KubeAPIQPS, "kube-api-qps", 50, "sustained requests a second to the API server")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", 100, "requests allowed above --kube-api-qps in a burst")
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", "cluster.local", "DNS domain of the cluster, for the in-cluster URLs in status.url")
	fs.BoolVar(&opts.WaitForAPIServer, "wait-for-api-server", false, "at start, wait for an API server that cannot be reached instead of exiting (the operator sets it itself when it restarts after losing its lease)")
	fs.BoolVar(&opts.ShowVersion, "version", false, "print the version and exit")
	// The flag package prints the usage on every error; a bad flag gets one
	// line instead, and --help the whole usage.
	fs.Usage = func() {}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(usage, "Usage: platform-operator [flags]\n\nRuns the controller of Websites (example.com/v1).\n\nFlags:")
			fs.SetOutput(usage)
			fs.PrintDefaults()
		}
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q: this command takes only flags", fs.Arg(0))
	}
	opts.Namespaces = namespaces
	if allNamespaces && len(opts.Namespaces) > 0 {
		return opts, errors.New("--all-namespaces and --namespace exclude each other: choose one")
	}
	if opts.LogFormat != "json" && opts.LogFormat != "text" {
		return opts, fmt.Errorf("--log-format must be json or text, not %q", opts.LogFormat)
	}
	if opts.LeaderElect && opts.LeaderElectionNamespace == "" && !inCluster {
		return opts, errors.New("--leader-elect needs --leader-election-namespace (or $POD_NAMESPACE) outside a cluster")
	}
	if opts.MaxConcurrentReconciles < 1 {
		return opts, fmt.Errorf("--max-concurrent-reconciles must be at least 1, not %d", opts.MaxConcurrentReconciles)
	}
	if opts.KubeAPIQPS <= 0 || opts.KubeAPIBurst < 1 {
		return opts, errors.New("--kube-api-qps and --kube-api-burst must be positive")
	}
	return opts, nil
}

// InCluster reports whether the process runs in a pod.
func InCluster() bool { return os.Getenv(inClusterEnv) != "" }
