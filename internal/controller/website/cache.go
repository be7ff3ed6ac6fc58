package website

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions keeps the cache to what the controller needs: Websites, and
// of Deployments, Services, Ingresses and pods only those the operator
// manages, selected by its label, without managedFields, which the
// controller never reads and which make up much of an object's size.
func CacheOptions(namespaces []string) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagerName})
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:    {Label: managed},
			&corev1.Service{}:       {Label: managed},
			&networkingv1.Ingress{}: {Label: managed},
			&corev1.Pod{}:           {Label: managed, Transform: TrimPod},
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
