// Package instance is the instance manager of a PostgresCluster: a
// subcommand of the operator's binary that runs as the first process of each
// instance's pod. It runs PostgreSQL (package postgres) and acts on what the
// operator decided, which it reads through the API server: it initializes or
// clones its data, follows the primary, promotes only when it is the target
// and holds the primary's lease, steps down or fences itself otherwise, and
// reports its instance in its pod's annotation. docs/postgres-design.md
// tells how it and the operator meet.
package instance

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"example.com/platform-operator/internal/objectstore"
	"example.com/platform-operator/internal/pgspec"
)

// Options are the settings of one instance manager, from its flags and the
// environment its pod gives it.
type Options struct {
	// PodName is the instance's name, CLUSTER-N; Namespace its pod's.
	PodName, Namespace string
	// NodeName is the node its pod runs on, reported for drains.
	NodeName string
	// ClusterName is its PostgresCluster's; ClusterDomain the DNS domain
	// of the cluster's Services.
	ClusterName, ClusterDomain string
	// PGData is the data directory; BinDir PostgreSQL's programs;
	// SocketDir the directory of its Unix socket.
	PGData, BinDir, SocketDir string
	// ListenAddress is where PostgreSQL listens ("*" for every address).
	ListenAddress string
	// StatusAddress serves /healthz and /readyz; "" for none.
	StatusAddress string
	// MetricsAddress serves /metrics over TLS; "" for none.
	MetricsAddress string
	// Kubeconfig reaches the API server; "" for the pod's own account.
	Kubeconfig string

	// LeaseDuration is how long the primary's lease lasts without a
	// renewal; RenewInterval how often the primary renews it.
	LeaseDuration, RenewInterval time.Duration

	// For tests that run instance managers in their own process: Config
	// reaches the API server (instead of Kubeconfig), Credential is the OS
	// user PostgreSQL runs as, and AddressOf gives an instance's address
	// and port (instead of its DNS name and 5432).
	Config     *rest.Config
	Credential *syscall.Credential
	AddressOf  func(instance string) (host string, port int)

	// WatchdogCommand runs the fencing watchdog (the binary and its
	// `instance watchdog`, to which the path of its file is added); none
	// when empty, as in the tests that run managers in their own process.
	WatchdogCommand []string

	// SelfCommand runs this binary's `instance` subcommands (the binary
	// and "instance"): PostgreSQL's archive_command and restore_command.
	// Without it the instance archives nothing.
	SelfCommand []string
	// PlainTCPWithoutCertificate lets PostgreSQL accept TCP connections
	// without TLS while the instance has no server certificate, as in the
	// tests that run managers without an operator to issue one. Otherwise
	// it accepts none until the certificate is written.
	PlainTCPWithoutCertificate bool
	// Archive is the object store the cluster archives WAL to, Recovery
	// the one it is restored from (spec.backup and bootstrap.fromBackup,
	// through the pod's environment); nil for none.
	Archive, Recovery *objectstore.Location
}

const (
	defaultLeaseDuration = 10 * time.Second
	defaultRenewInterval = 2 * time.Second
)

// ParseOptions reads the flags of `instance run` and the environment.
func ParseOptions(args []string, getenv func(string) string, usage io.Writer) (Options, error) {
	opts := Options{LeaseDuration: defaultLeaseDuration, RenewInterval: defaultRenewInterval}
	fs := flag.NewFlagSet("instance run", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path of a kubeconfig; default: the pod's ServiceAccount")
	fs.StringVar(&opts.ListenAddress, "listen-address", envOr(getenv, pgspec.EnvListenAddress, "*"), "where PostgreSQL listens")
	fs.StringVar(&opts.StatusAddress, "status-address", fmt.Sprintf(":%d", pgspec.StatusPort), "address of /healthz and /readyz; empty for none")
	fs.StringVar(&opts.MetricsAddress, "metrics-address", fmt.Sprintf(":%d", pgspec.MetricsPort), "address of /metrics (HTTPS); empty for none")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.PodName = getenv(pgspec.EnvPodName)
	opts.Namespace = getenv(pgspec.EnvPodNamespace)
	opts.NodeName = getenv(pgspec.EnvNodeName)
	opts.ClusterName = getenv(pgspec.EnvClusterName)
	opts.ClusterDomain = envOr(getenv, pgspec.EnvClusterDomain, "cluster.local")
	opts.PGData = getenv(pgspec.EnvPGData)
	opts.BinDir = envOr(getenv, pgspec.EnvPGBinDir, pgspec.BinDir)
	opts.SocketDir = envOr(getenv, pgspec.EnvSocketDir, pgspec.SocketDir)
	var missing []string
	for name, value := range map[string]string{pgspec.EnvPodName: opts.PodName, pgspec.EnvPodNamespace: opts.Namespace, pgspec.EnvClusterName: opts.ClusterName, pgspec.EnvPGData: opts.PGData} {
		if value == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return opts, fmt.Errorf("the environment lacks %s: the operator's pod sets them", strings.Join(missing, ", "))
	}
	if !strings.HasPrefix(opts.PodName, opts.ClusterName+"-") {
		return opts, errors.New("POD_NAME must be CLUSTER_NAME-N")
	}
	self, err := os.Executable()
	if err != nil {
		return opts, fmt.Errorf("the path of this program, for its fencing watchdog: %w", err)
	}
	opts.WatchdogCommand = []string{self, "instance", "watchdog"}
	opts.SelfCommand = []string{self, "instance"}
	for _, store := range []struct {
		prefix string
		loc    **objectstore.Location
	}{{pgspec.ArchiveStore, &opts.Archive}, {pgspec.RecoveryStore, &opts.Recovery}} {
		loc, ok, err := pgspec.LocationFromEnv(store.prefix, getenv)
		if err != nil {
			return opts, err
		}
		if ok {
			*store.loc = &loc
		}
	}
	return opts, nil
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return fallback
}
