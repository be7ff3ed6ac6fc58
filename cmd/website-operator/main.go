// Command website-operator runs the controller of Websites (example.com/v1):
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
	"syscall"

	"example.com/website-operator/internal/operator"
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
		fmt.Fprintf(os.Stderr, "website-operator: %v (see --help)\n", err)
		return 2
	}
	if opts.ShowVersion {
		fmt.Println(operator.Version)
		return 0
	}

	config, err := operator.RESTConfig(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "website-operator: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := operator.Run(ctx, opts, config, operator.NewLogger(opts, os.Stderr)); err != nil {
		fmt.Fprintf(os.Stderr, "website-operator: %v\n", err)
		return 1
	}
	return 0
}
