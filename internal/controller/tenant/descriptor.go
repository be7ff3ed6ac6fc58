package tenant

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/platform"
)

// Descriptor is the Tenant controller as the operator's registry sees it.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:         "tenant",
		Resource:     tenantv1.GroupVersion.WithResource("tenants"),
		Subresources: []string{"status"},
		ClusterWide:  true,
		AddToScheme:  tenantv1.AddToScheme,
		Cache:        CacheByObject,
		Setup:        setup,
	}
}

// CacheByObject keeps every child type of a Tenant in the cache only when it
// carries the operator's label. Secrets above all: the operator must never
// hold the cluster's other Secrets in memory.
func CacheByObject() map[client.Object]controller.CacheSetting {
	return map[client.Object]controller.CacheSetting{
		&corev1.Namespace{}:           children.CacheConfig("", nil),
		&rbacv1.RoleBinding{}:         children.CacheConfig("", nil),
		&corev1.ServiceAccount{}:      children.CacheConfig("", nil),
		&corev1.Secret{}:              children.CacheConfig("", nil),
		&corev1.ResourceQuota{}:       children.CacheConfig("", nil),
		&corev1.LimitRange{}:          children.CacheConfig("", nil),
		&networkingv1.NetworkPolicy{}: children.CacheConfig("", nil),
	}
}

func setup(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
	caData, err := caOf(mgr.GetConfig())
	if err != nil {
		return err
	}
	if opts.TenantAPIServer != "" {
		// Another address may well have another certificate: never the
		// operator's CA for it unless none was given.
		caData = opts.TenantAPIServerCA
	}
	reconciler := &Reconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(platform.Name),
		Clock:                   opts.Clock,
		APIServerURL:            opts.TenantAPIServer,
		CAData:                  caData,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}
	return reconciler.SetupWithManager(mgr)
}

// caOf is the CA the operator trusts the API server with, for the tenants'
// kubeconfigs: from its kubeconfig, or the file its pod's ServiceAccount
// mount provides.
func caOf(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read the API server's CA for the Tenants' kubeconfigs: %w", err)
	}
	return data, nil
}
