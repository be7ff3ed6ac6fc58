package operator

import (
	"context"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Before the manager starts, the informers of every watched type exist, so
// that the cache's sync, and readiness with it, waits for them to list.
func TestTheWatchedTypesAreCachedBeforeTheControllersStart(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	informers := &informertest.FakeInformers{Scheme: scheme}

	g.Expect(warmCache(context.Background(), informers, []client.Object{&corev1.Service{}, &appsv1.Deployment{}})).To(Succeed())
	g.Expect(informers.InformersByGVK).To(HaveKey(corev1.SchemeGroupVersion.WithKind("Service")))
	g.Expect(informers.InformersByGVK).To(HaveKey(appsv1.SchemeGroupVersion.WithKind("Deployment")))

	synced := false
	informers.Synced = &synced
	check := cachesSynced(informers)
	req := httptest.NewRequest("GET", "/readyz", nil)
	g.Expect(check(req)).To(MatchError(ContainSubstring("caches not synced yet")))
	synced = true
	g.Expect(check(req)).To(Succeed())
}
