package tenant

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
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
)

// Descriptor is the Tenant controller as the operator's registry sees it.
func Descriptor() controller.Descriptor {
	var apiServer, apiServerCAFile string
	return controller.Descriptor{
		Name:         "tenant",
		Resource:     tenantv1.GroupVersion.WithResource("tenants"),
		Subresources: []string{"status"},
		ClusterWide:  true,
		AddToScheme:  tenantv1.AddToScheme,
		Cache:        CacheByObject,
		Flags: func(fs *flag.FlagSet) func() error {
			fs.StringVar(&apiServer, "tenant-api-server", "", "the API server's https URL written into Tenants' credential kubeconfigs, as tenants reach it (default: the address the operator uses, which in a pod is the in-cluster one)")
			fs.StringVar(&apiServerCAFile, "tenant-api-server-ca-file", "", "PEM file of the CA written with --tenant-api-server (default: the CA the operator trusts)")
			return func() error { return validateAPIServer(apiServer, apiServerCAFile) }
		},
		Setup: func(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
			r := NewReconciler(mgr, mgr.GetClient(), opts)
			caData, err := caOf(mgr.GetConfig())
			if err != nil {
				return err
			}
			if apiServer != "" {
				r.APIServerURL = apiServer
				// Another address may well have another certificate: never
				// the operator's CA for it unless none was given.
				if caData, err = readCA(apiServerCAFile); err != nil {
					return err
				}
			}
			r.CAData = caData
			return r.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
		},
	}
}

// validateAPIServer checks the address tenants' kubeconfigs get: an https
// URL with a host, as a kubeconfig's server; a CA file needs it.
func validateAPIServer(server, caFile string) error {
	if server == "" {
		if caFile != "" {
			return errors.New("--tenant-api-server-ca-file needs --tenant-api-server")
		}
		return nil
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("--tenant-api-server must be an https URL with a host and no path, such as https://api.example.com:6443, not %q", server)
	}
	return nil
}

// readCA reads the CA of --tenant-api-server-ca-file, if given.
func readCA(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--tenant-api-server-ca-file: %w", err)
	}
	return data, nil
}

// CacheByObject keeps every child type of a Tenant in the cache only when it
// carries the operator's label. Secrets above all: the operator must never
// hold the cluster's other Secrets in memory.
func CacheByObject() map[client.Object]children.CacheSetting {
	return map[client.Object]children.CacheSetting{
		&corev1.Namespace{}:           children.CacheConfig("", nil),
		&rbacv1.RoleBinding{}:         children.CacheConfig("", nil),
		&corev1.ServiceAccount{}:      children.CacheConfig("", nil),
		&corev1.Secret{}:              children.CacheConfig("", nil),
		&corev1.ResourceQuota{}:       children.CacheConfig("", nil),
		&corev1.LimitRange{}:          children.CacheConfig("", nil),
		&networkingv1.NetworkPolicy{}: children.CacheConfig("", nil),
	}
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
