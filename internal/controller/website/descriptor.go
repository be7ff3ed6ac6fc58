package website

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/metrics"
	"example.com/platform-operator/internal/platform"
)

// Descriptor is the Website controller as the operator's registry sees it.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:         "website",
		Resource:     websitev1.GroupVersion.WithResource("websites"),
		Subresources: []string{"status", "scale"},
		AddToScheme:  websitev1.AddToScheme,
		Cache:        func() map[client.Object]cache.ByObject { return CacheOptions(nil).ByObject },
		Setup:        setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
	tracker, err := metrics.Register(ctrlmetrics.Registry, mgr.GetCache(), opts.Clock)
	if err != nil {
		return fmt.Errorf("register Website metrics: %w", err)
	}
	reconciler := &WebsiteReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(platform.Name),
		Clock:                   opts.Clock,
		ClusterDomain:           opts.ClusterDomain,
		Metrics:                 tracker,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}
	return reconciler.SetupWithManager(mgr)
}
