package website

import (
	"context"
	"flag"

	ctrl "sigs.k8s.io/controller-runtime"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller"
)

// Descriptor is the Website controller as the operator's registry sees it.
func Descriptor() controller.Descriptor {
	var adoptTutorial, allowCatchAll bool
	return controller.Descriptor{
		Name:         "website",
		Resource:     websitev1.GroupVersion.WithResource("websites"),
		Subresources: []string{"status", "scale"},
		AddToScheme:  websitev1.AddToScheme,
		Cache:        cacheObjects,
		Flags: func(fs *flag.FlagSet) func() error {
			fs.BoolVar(&adoptTutorial, "adopt-tutorial", false, "take over, without downtime, the Deployments the tutorial's kopf operator made, and release its finalizer, for every Website (one Website asks with the annotation example.com/adopt=tutorial)")
			fs.BoolVar(&allowCatchAll, "allow-catch-all-ingress", true, "make the Ingress of a Website without spec.ingress.host, which serves every host its ingress controller does not route elsewhere (one namespace at a time: the first to claim it); false refuses such Websites' Ingress, for clusters whose ingress admission refuses catch-all rules to their users")
			return nil
		},
		Setup: func(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
			r := NewReconciler(mgr, mgr.GetClient(), opts)
			r.AdoptTutorial = adoptTutorial
			r.RefuseCatchAllIngress = !allowCatchAll
			return r.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
		},
	}
}
