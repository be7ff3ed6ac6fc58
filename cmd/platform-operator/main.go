// Command platform-operator runs the controllers of the platform's kinds
// (Website, and the others of --controllers): each turns its resources into
// the Kubernetes objects they stand for, and reports in their status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/operator"
	"example.com/platform-operator/internal/platform"
)

func main() {
	// The same binary is the PostgresClusters' instance manager, as the
	// first process of their pods.
	if len(os.Args) > 1 && os.Args[1] == "instance" {
		os.Exit(instance.Main(os.Args[2:], os.Getenv, os.Stderr))
	}
	// `platform-operator version`, as --version.
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(platform.BuildVersion())
		os.Exit(0)
	}
	os.Exit(run())
}

// run returns the exit code: 2 for a bad command line, 1 for any other
// failure, including a lost leader election lease, after which the pod
// restarts and the process rejoins the election afresh.
func run() int {
	opts, err := operator.ParseOptions(os.Args[1:], os.Getenv, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (see --help)\n", platform.Name, err)
		return 2
	}
	if opts.ShowVersion {
		fmt.Println(platform.BuildVersion())
		return 0
	}

	operator.TuneRuntime(opts, os.Getenv)

	config, err := operator.RESTConfig(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", platform.Name, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := operator.Run(ctx, opts, config, operator.NewLogger(opts, os.Stderr)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", platform.Name, err)
		return 1
	}
	return 0
}
