package operator

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
)

func trimA(obj any) (any, error) { return obj, nil }
func trimB(obj any) (any, error) { return obj, nil }

// withCache is a controller that watches obj with config.
func withCache(name string, obj client.Object, config cache.ByObject) controller.Descriptor {
	return withSetting(name, obj, children.CacheSetting{ByObject: config})
}

func withSetting(name string, obj client.Object, setting children.CacheSetting) controller.Descriptor {
	return controller.Descriptor{Name: name, Cache: func() map[client.Object]children.CacheSetting {
		return map[client.Object]children.CacheSetting{obj: setting}
	}}
}

func TestCacheOptionsMerge(t *testing.T) {
	managed := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "platform-operator"})
	tests := []struct {
		name        string
		controllers []controller.Descriptor
		wantErr     string
	}{
		{
			name: "different types",
			controllers: []controller.Descriptor{
				withCache("website", &appsv1.Deployment{}, cache.ByObject{Label: managed}),
				withCache("tenant", &corev1.Namespace{}, cache.ByObject{Label: managed}),
			},
		},
		{
			name: "the same type the same way",
			controllers: []controller.Descriptor{
				withCache("website", &corev1.Pod{}, cache.ByObject{Label: managed, Transform: trimA}),
				withCache("backupjob", &corev1.Pod{}, cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "platform-operator"}), Transform: trimA}),
			},
		},
		{
			name: "label selectors differ",
			controllers: []controller.Descriptor{
				withCache("website", &corev1.Service{}, cache.ByObject{Label: managed}),
				withCache("tenant", &corev1.Service{}, cache.ByObject{}),
			},
			wantErr: `controllers website and tenant configure the cache of Service differently (label selector "app.kubernetes.io/managed-by=platform-operator" or "")`,
		},
		{
			name: "field selectors differ",
			controllers: []controller.Descriptor{
				withCache("website", &corev1.Pod{}, cache.ByObject{Field: fields.OneTermEqualSelector("spec.nodeName", "a")}),
				withCache("backupjob", &corev1.Pod{}, cache.ByObject{}),
			},
			wantErr: `configure the cache of Pod differently (field selector "spec.nodeName=a" or "")`,
		},
		{
			name: "transforms differ",
			controllers: []controller.Descriptor{
				withCache("website", &corev1.Pod{}, cache.ByObject{Transform: trimA}),
				withCache("backupjob", &corev1.Pod{}, cache.ByObject{Transform: trimB}),
			},
			wantErr: "configure the cache of Pod differently (transform function)",
		},
		{
			// Every children.CacheConfig transform is a closure of one
			// literal: the same function to Go, told apart by its name.
			name: "named transforms differ",
			controllers: []controller.Descriptor{
				withSetting("website", &corev1.Pod{}, children.CacheConfig("website.TrimPod", trimA)),
				withSetting("postgrescluster", &corev1.Pod{}, children.CacheConfig("postgrescluster.TrimPod", trimB)),
			},
			wantErr: `configure the cache of Pod differently (transform "children.trimChild+website.TrimPod" or "children.trimChild+postgrescluster.TrimPod")`,
		},
		{
			name: "the same named transform",
			controllers: []controller.Descriptor{
				withSetting("website", &corev1.Pod{}, children.CacheConfig("website.TrimPod", trimA)),
				withSetting("backupjob", &corev1.Pod{}, children.CacheConfig("website.TrimPod", trimA)),
			},
		},
		{
			name: "one transforms, the other not",
			controllers: []controller.Descriptor{
				withCache("website", &corev1.Pod{}, cache.ByObject{}),
				withCache("backupjob", &corev1.Pod{}, cache.ByObject{Transform: trimB}),
			},
			wantErr: "(transform function)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			scheme, err := NewScheme()
			g.Expect(err).NotTo(HaveOccurred())
			opts, err := cacheOptions(scheme, tt.controllers, nil)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(opts.DefaultTransform).NotTo(BeNil(), "managedFields are stripped")
			types := map[string]int{}
			for obj := range opts.ByObject {
				types[fmt.Sprintf("%T", obj)]++
			}
			for _, n := range types {
				g.Expect(n).To(Equal(1), "one entry per type: %v", types)
			}
		})
	}
}

func TestCacheOptionsNamespaces(t *testing.T) {
	g := NewWithT(t)
	scheme, err := NewScheme(Controllers()...)
	g.Expect(err).NotTo(HaveOccurred())

	all, err := cacheOptions(scheme, Controllers(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all.DefaultNamespaces).To(BeNil(), "all namespaces")
	g.Expect(all.ByObject).NotTo(BeEmpty(), "the registry's controllers narrow the cache")

	some, err := cacheOptions(scheme, Controllers(), []string{"a", "b"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(some.DefaultNamespaces).To(HaveLen(2))
	g.Expect(some.DefaultNamespaces).To(HaveKey("a"))
	g.Expect(some.DefaultNamespaces).To(HaveKey("b"))
}
