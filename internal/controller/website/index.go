package website

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
)

// Cache indexes of what a reconcile lists. A label selector makes the cache
// scan every EndpointSlice of the namespace it lists in, so with thousands
// of Websites in a namespace each reconcile would cost in proportion to all
// of them; an index finds a Website's own at once.
const (
	// endpointSliceServiceIndex keys an EndpointSlice by its Service.
	endpointSliceServiceIndex = "website.example.com/endpointslice-service"
)

// serviceOfSliceLabels is the Website Service that an EndpointSlice with
// these labels belongs to, or "".
func serviceOfSliceLabels(labels map[string]string) string {
	if labels[NameLabel] != AppName {
		return ""
	}
	return labels[discoveryv1.LabelServiceName]
}

// indexFields registers the indexes with mgr's cache.
func indexFields(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &discoveryv1.EndpointSlice{}, endpointSliceServiceIndex, func(o client.Object) []string {
		return nonEmpty(serviceOfSliceLabels(o.GetLabels()))
	}); err != nil {
		return fmt.Errorf("index EndpointSlices by Service: %w", err)
	}
	if err := indexer.IndexField(ctx, &websitev1.Website{}, websiteHostIndex, func(o client.Object) []string {
		w, ok := o.(*websitev1.Website)
		if !ok {
			return nil
		}
		return nonEmpty(ingressHost(w))
	}); err != nil {
		return fmt.Errorf("index Websites by Ingress host: %w", err)
	}
	return nil
}

func nonEmpty(value string) []string {
	if value == "" {
		return nil
	}
	return []string{value}
}
