package postgrescluster

import (
	"context"
	"flag"
	"os"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
)

// InstanceImageEnv names the environment variable that holds the
// operator's own image in its pod (deploy/base sets it from the image
// kustomize writes): the default of --postgres-instance-image.
const InstanceImageEnv = "OPERATOR_IMAGE"

// Descriptor is the PostgresCluster controller as the operator's registry
// sees it.
func Descriptor() controller.Descriptor {
	var instanceImage string
	return controller.Descriptor{
		Name:         "postgrescluster",
		Resource:     v1alpha1.GroupVersion.WithResource("postgresclusters"),
		Subresources: []string{"status"},
		AddToScheme:  v1alpha1.AddToScheme,
		Cache:        CacheByObject,
		Flags: func(fs *flag.FlagSet) func() error {
			fs.StringVar(&instanceImage, "postgres-instance-image", "", "image whose /platform-operator the PostgresClusters' pods run as their instance manager (default: $"+InstanceImageEnv+", which deploy/ sets to the operator's own image)")
			return nil
		},
		Setup: func(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
			r := NewReconciler(mgr, mgr.GetClient(), opts)
			if instanceImage != "" {
				r.InstanceImage = instanceImage
			}
			return r.SetupWithManager(mgr, opts.MaxConcurrentReconciles)
		},
	}
}

// defaultInstanceImage is the operator's own image, as its pod's
// environment says, else the image of this version.
func defaultInstanceImage() string {
	if image := os.Getenv(InstanceImageEnv); image != "" {
		return image
	}
	return "example.com/" + platform.Name + ":latest"
}

// CacheByObject keeps of every type the controller watches only what the
// operator manages, by its label; nodes whole but for what a cordon says.
func CacheByObject() map[client.Object]children.CacheSetting {
	return map[client.Object]children.CacheSetting{
		&corev1.Pod{}:                   kit.PodCache(),
		&corev1.Service{}:               kit.ServiceCache(),
		&corev1.PersistentVolumeClaim{}: children.CacheConfig("", nil),
		&corev1.Secret{}:                children.CacheConfig("", nil),
		&corev1.ServiceAccount{}:        children.CacheConfig("", nil),
		&rbacv1.Role{}:                  children.CacheConfig("", nil),
		&rbacv1.RoleBinding{}:           children.CacheConfig("", nil),
		&policyv1.PodDisruptionBudget{}: children.CacheConfig("", nil),
		&coordinationv1.Lease{}:         children.CacheConfig("", nil),
		&corev1.Node{}:                  kit.NodeCache(),
	}
}
