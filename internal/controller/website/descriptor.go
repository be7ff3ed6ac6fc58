package website

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
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
		Cache:        cacheObjects,
		Setup:        setup,
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
	tracker, err := metrics.Register(ctrlmetrics.Registry, mgr.GetCache(), opts.Clock)
	if err != nil {
		return fmt.Errorf("register Website metrics: %w", err)
	}
	reconciler := NewReconciler(mgr, mgr.GetClient(), opts)
	reconciler.Metrics = tracker
	return reconciler.SetupWithManager(mgr)
}

// NewReconciler returns the Website reconciler of mgr, reading and writing
// with c: the manager's client, or a wrapper of it in tests.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *WebsiteReconciler {
	recorder := mgr.GetEventRecorder(platform.Name)
	return &WebsiteReconciler{
		Client:                  c,
		APIReader:               mgr.GetAPIReader(),
		Children:                children.NewManagerWithClient(mgr, c, "Website", recorder),
		Status:                  children.NewStatusWriterWithClock(c, opts.Clock).ReadingLiveFrom(mgr.GetAPIReader()),
		Recorder:                recorder,
		Clock:                   opts.Clock,
		ClusterDomain:           opts.ClusterDomain,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		AdoptTutorial:           opts.AdoptTutorial,
		PodSecurityVersion:      opts.PodSecurityVersion,
	}
}
