// Command platform-operator runs the controller of Websites (example.com/v1):
// each Website becomes a Deployment, a Service and, when asked, an Ingress,
// and its status tells whether the site serves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"example.com/platform-operator/internal/operator"
)

func main() {
	os.Exit(run())
}

func run() int {
	opts, err := operator.ParseOptions(os.Args[1:], os.Getenv, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "platform-operator: %v (see --help)\n", err)
		return 2
	}
	if opts.ShowVersion {
		fmt.Println(operator.Version)
		return 0
	}

	config, err := operator.RESTConfig(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "platform-operator: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = operator.Run(ctx, opts, config, operator.NewLogger(opts, os.Stderr))
	if errors.Is(err, operator.ErrLeaseLost) && ctx.Err() == nil {
		restartInPlace(err)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "platform-operator: %v\n", err)
		return 1
	}
	return 0
}

// restartInPlace replaces the process with a fresh copy of itself after it
// lost its lease (for instance during an API server outage longer than the
// renew deadline): a new manager, with empty caches, rejoins the election.
// The pod does not restart, so no crash-loop back-off delays the recovery,
// and --wait-for-api-server makes the new copy wait for the API server
// instead of exiting while it is still down.
func restartInPlace(cause error) {
	args := os.Args
	if !slices.Contains(args, "--wait-for-api-server") {
		args = append(args, "--wait-for-api-server")
	}
	fmt.Fprintf(os.Stderr, "platform-operator: %v; restarting in place to rejoin the election\n", cause)
	err := syscall.Exec("/proc/self/exe", args, os.Environ())
	fmt.Fprintf(os.Stderr, "platform-operator: restart in place: %v\n", err)
}
