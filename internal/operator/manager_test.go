package operator

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/backupjob"
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

// The types warmed are those the controllers watch: each controller's own
// kind, its cache settings' types and, where served, its optional APIs.
func TestWatchedObjectsAreTheControllersWatches(t *testing.T) {
	g := NewWithT(t)
	d := backupjob.Descriptor()
	scheme, err := NewScheme(d)
	g.Expect(err).NotTo(HaveOccurred())
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind("BackupJob"), meta.RESTScopeNamespace)
	mapper.Add(snapshotv1.SchemeGroupVersion.WithKind("VolumeSnapshot"), meta.RESTScopeNamespace)
	kinds := func(p plan) []string {
		watched, err := watchedObjects(mapper, scheme, p)
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, obj := range watched {
			names = append(names, fmt.Sprintf("%T", obj))
		}
		return names
	}

	withoutSnapshots := plan{run: []controller.Descriptor{d}, servedOptional: map[string]map[schema.GroupVersionResource]bool{d.Name: {backupjob.SnapshotAPI: false}}}
	g.Expect(kinds(withoutSnapshots)).To(ConsistOf("*v1alpha1.BackupJob", "*v1.Job", "*v1.PersistentVolumeClaim", "*v1.ConfigMap"))
	withSnapshots := plan{run: []controller.Descriptor{d}, servedOptional: map[string]map[schema.GroupVersionResource]bool{d.Name: {backupjob.SnapshotAPI: true}}}
	g.Expect(kinds(withSnapshots)).To(ConsistOf("*v1alpha1.BackupJob", "*v1.Job", "*v1.PersistentVolumeClaim", "*v1.ConfigMap", "*v1.VolumeSnapshot"))
}
