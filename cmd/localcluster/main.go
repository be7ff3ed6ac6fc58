// Command localcluster runs the local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok) until
// Ctrl-C, and prints how to point kubectl at it.
//
// With -operator it also installs deploy/ and runs the operator binary with
// a token of the operator's own ServiceAccount, so that RBAC is real; with
// -apply it then applies example Websites and shows them turning Ready. The
// pods of PostgresClusters run that binary's instance manager (or that of
// -instance-binary) as host processes, a simulation part.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/operator"
)

func main() {
	// When whatever started this command dies without passing on Ctrl-C (a
	// killed make, a closed terminal), stop the cluster as on Ctrl-C.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

type config struct {
	cluster  localcluster.Options
	operator string
	apply    string
}

func run() error {
	var cfg config
	flag.StringVar(&cfg.cluster.BinDir, "bin-dir", os.Getenv(localcluster.BinDirEnv), "folder of the control-plane binaries (hack/kube-binaries.sh prints it)")
	flag.StringVar(&cfg.cluster.Dir, "dir", "", "folder for the cluster's state and logs (default: a temporary folder, removed on exit)")
	flag.IntVar(&cfg.cluster.Nodes, "nodes", 1, "number of kwok nodes")
	flag.IntVar(&cfg.cluster.NodePods, "node-pods", 1000, "pods each node can run")
	flag.IntVar(&cfg.cluster.APIServerPort, "port", 0, "API server port on 127.0.0.1 (default: a free port)")
	flag.BoolVar(&cfg.cluster.Simulations, "simulations", true, "run the simulation parts: a volume provisioner for the StorageClass local, the VolumeSnapshot API with a snapshot simulator, PostgreSQL pods that run their instance manager")
	flag.StringVar(&cfg.cluster.InstanceBinary, "instance-binary", "", "operator binary whose 'instance run' each PostgresCluster pod runs as a host process (default: the -operator binary; needs root)")
	flag.StringVar(&cfg.cluster.ObjectStoreBinDir, "object-store-bin-dir", os.Getenv(localcluster.ObjectStoreBinDirEnv), "folder of SeaweedFS's weed (hack/seaweedfs.sh prints it): with -simulations, the cluster's S3 object store; none when empty")
	flag.StringVar(&cfg.operator, "operator", "", "operator binary to install and run with its own ServiceAccount")
	flag.StringVar(&cfg.apply, "apply", "", "with -operator: a file or folder of manifests to apply once the operator runs")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	cfg.cluster.Logf = say

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	envOpts := devenv.EnvironmentOptions{Cluster: cfg.cluster, Manifests: []string{}}
	if cfg.operator != "" {
		say("Installing the kustomization of %s (but the operator's Deployment: it runs here as a process), then the operator",
			strings.Join(devenv.DefaultManifests, ", "))
		envOpts.Manifests = devenv.DefaultManifests
		envOpts.OperatorBinary = cfg.operator
	}
	env, err := devenv.StartEnvironment(ctx, envOpts)
	if err != nil {
		return err
	}
	defer func() {
		say("Stopping the operator and the cluster")
		env.Stop()
	}()

	var operator *devenv.Operator
	if cfg.operator != "" {
		operator = env.Operators()[0]
		say("Operator running as ServiceAccount %s/%s; logs in %s; /metrics on %s, /healthz and /readyz on %s",
			devenv.OperatorNamespace, devenv.OperatorServiceAccount, operator.LogPath, operator.MetricsURL, operator.ProbesURL)
		if cfg.apply != "" {
			objs, err := env.Applier.ApplyPaths(ctx, cfg.apply)
			if err != nil {
				return err
			}
			for _, obj := range objs {
				say("Applied %s", devenv.Describe(obj))
			}
		}
	}

	fmt.Printf("\nPoint kubectl at the cluster (admin) with:\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH   # the kubectl built with the control plane\n\n",
		env.Cluster.Kubeconfig(), env.Cluster.BinDir())
	say("Running; press Ctrl-C to stop everything")
	return waitUntilDone(ctx, env.Cluster, operator)
}

// waitUntilDone shows the resources of every kind whenever they change,
// until Ctrl-C or until a component or the operator dies.
func waitUntilDone(ctx context.Context, cluster *localcluster.Cluster, operator *devenv.Operator) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	shown := map[string][]byte{}
	var kinds []shownKind
	var psql postgresCommands
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if err := cluster.Err(); err != nil {
			return err
		}
		if operator == nil {
			continue
		}
		if exited, err := operator.Exited(); exited {
			return fmt.Errorf("the operator exited (%v); the end of %s:\n%s", err, operator.LogPath, devenv.TailFile(operator.LogPath, 15))
		}
		if kinds == nil {
			kinds = shownKinds(ctx, cluster)
		}
		psql.show(ctx, cluster)
		for _, kind := range kinds {
			out, err := cluster.Kubectl(ctx, append([]string{"get", kind.resource}, kind.args...)...).CombinedOutput()
			if err == nil && len(bytes.TrimSpace(out)) > 0 && !bytes.Equal(out, shown[kind.resource]) {
				fmt.Printf("\n$ kubectl get %s %s   (%s)\n%s", kind.plural, kind.shownArgs, time.Now().Format(time.TimeOnly), out)
				shown[kind.resource] = out
			}
		}
	}
}

// shownKinds are the kinds of the operator's registry whose CRDs the cluster
// serves, as make run shows them.
func shownKinds(ctx context.Context, cluster *localcluster.Cluster) []shownKind {
	var kinds []shownKind
	for _, d := range operator.Controllers() {
		out, err := cluster.Kubectl(ctx, "get", "crd", d.Resource.Resource+"."+d.Resource.Group, "-o", "json").Output()
		if err != nil {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(out, crd); err != nil {
			continue
		}
		kinds = append(kinds, showKind(crd))
	}
	return kinds
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "localcluster: "+format+"\n", args...)
}
