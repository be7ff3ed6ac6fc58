package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/test/bench/benchkit"
)

// apiCounters are the API server's request counters and watch traffic at
// one moment, from which a phase counts what it caused.
type apiCounters struct {
	requests benchkit.RequestCounts
	watch    benchkit.WatchTraffic
}

// scrapeAPICounters reads the API server's counters now.
func (e *env) scrapeAPICounters(ctx context.Context) (apiCounters, error) {
	requests, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return apiCounters{}, err
	}
	watch, err := benchkit.ScrapeWatchTraffic(ctx, e.admin)
	if err != nil {
		return apiCounters{}, err
	}
	return apiCounters{requests: requests, watch: watch}, nil
}

// apiTraffic is what the API server served between two scrapes: write and
// read requests by verb and resource, and watch events.
type apiTraffic struct {
	writes, reads benchkit.RequestCounts
	watch         *benchkit.WatchTraffic
}

// apiTrafficSince is what the API server served since before.
func (e *env) apiTrafficSince(ctx context.Context, before apiCounters) (apiTraffic, error) {
	after, err := e.scrapeAPICounters(ctx)
	if err != nil {
		return apiTraffic{}, err
	}
	return apiTraffic{
		writes: after.requests.WritesSince(before.requests),
		reads:  after.requests.ReadsSince(before.requests),
		watch:  ptr.To(after.watch.Since(before.watch)),
	}, nil
}

// createWebsites creates the N Websites of a phase in the benchmark's
// namespace with the load client's workers; it returns how many failed
// after retries and the first error's text.
func (e *env) createWebsites(ctx context.Context, dyn dynamic.Interface) (failed int, firstError string) {
	failed, err := benchkit.ForEach(ctx, e.n, e.cfg.load.Workers, func(ctx context.Context, i int) error {
		_, err := dyn.Resource(websitesGVR).Namespace(benchNamespace).Create(ctx, websiteObject(siteName(i)), metav1.CreateOptions{})
		return benchkit.IgnoreExists(err)
	})
	if err != nil {
		firstError = err.Error()
	}
	return failed, firstError
}
