package postgrescluster

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
)

// Descriptor is the PostgresCluster controller as the operator's registry
// sees it.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:         "postgrescluster",
		Resource:     v1alpha1.GroupVersion.WithResource("postgresclusters"),
		Subresources: []string{"status"},
		AddToScheme:  v1alpha1.AddToScheme,
		Cache:        CacheByObject,
		Setup: func(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
			return NewReconciler(mgr, mgr.GetClient(), opts).SetupWithManager(mgr, opts.MaxConcurrentReconciles)
		},
	}
}

// CacheByObject keeps of every type the controller watches only what the
// operator manages, by its label, and of pods only the clusters'; nodes
// whole but for what a cordon says.
func CacheByObject() map[client.Object]children.CacheSetting {
	return map[client.Object]children.CacheSetting{
		&corev1.Pod{}:                   kit.PodCache(v1alpha1.PostgresClusterLabel),
		&corev1.Service{}:               kit.ServiceCache(),
		&corev1.PersistentVolumeClaim{}: children.CacheConfig("", nil),
		&corev1.Secret{}:                children.CacheConfig("", nil),
		&corev1.ServiceAccount{}:        children.CacheConfig("", nil),
		&rbacv1.Role{}:                  children.CacheConfig("", nil),
		&rbacv1.RoleBinding{}:           children.CacheConfig("", nil),
		&policyv1.PodDisruptionBudget{}: children.CacheConfig("", nil),
		&coordinationv1.Lease{}:         children.CacheConfig("", nil),
		&networkingv1.NetworkPolicy{}:   children.CacheConfig("", nil),
		&corev1.Node{}:                  kit.NodeCache(),
	}
}
