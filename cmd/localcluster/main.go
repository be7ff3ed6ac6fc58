// Command localcluster runs the local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok) until
// Ctrl-C, and prints how to point kubectl at it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"example.com/website-operator/internal/localcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts localcluster.Options
	flag.StringVar(&opts.BinDir, "bin-dir", os.Getenv(localcluster.BinDirEnv), "folder of the control-plane binaries (hack/kube-binaries.sh prints it)")
	flag.StringVar(&opts.Dir, "dir", "", "folder for the cluster's state and logs (default: a temporary folder, removed on exit)")
	flag.IntVar(&opts.Nodes, "nodes", 1, "number of kwok nodes")
	flag.IntVar(&opts.NodePods, "node-pods", 1000, "pods each node can run")
	flag.IntVar(&opts.APIServerPort, "port", 0, "API server port on 127.0.0.1 (default: a free port)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "localcluster: "+format+"\n", args...)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cluster, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "localcluster: stopping")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster:", err)
		}
	}()

	fmt.Printf("export KUBECONFIG=%s\nexport PATH=%s:$PATH   # for the kubectl built with the control plane\n",
		cluster.Kubeconfig(), opts.BinDir)
	fmt.Fprintln(os.Stderr, "localcluster: running; press Ctrl-C to stop")
	return waitUntilDone(ctx, cluster)
}

// waitUntilDone returns nil on Ctrl-C, or the error of a component that
// died.
func waitUntilDone(ctx context.Context, cluster *localcluster.Cluster) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if err := cluster.Err(); err != nil {
				return err
			}
		}
	}
}

