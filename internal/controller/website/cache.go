package website

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
)

// cacheObjects keeps the cache to what the controller reads: of
// Deployments, Services, Ingresses and EndpointSlices only those the
// operator manages, selected by its label (EndpointSlices copy their
// Service's labels), EndpointSlices trimmed to what the status needs,
// Deployments without their pod template and Services without their spec.
// Pods are not cached (see podCheckFor).
func cacheObjects() map[client.Object]children.CacheSetting {
	return map[client.Object]children.CacheSetting{
		&appsv1.Deployment{}:         children.CacheConfig("website.TrimDeployment", TrimDeployment),
		&corev1.Service{}:            kit.ServiceCache(),
		&networkingv1.Ingress{}:      children.CacheConfig("", nil),
		&discoveryv1.EndpointSlice{}: children.CacheConfig("website.TrimEndpointSlice", TrimEndpointSlice),
	}
}

// CacheOptions are the cache options of a manager that runs only the
// Website controller, for tests; the operator merges cacheObjects with those
// of its other controllers.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: children.ByObject(cacheObjects())}
}
