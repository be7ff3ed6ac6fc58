package backupjob

import (
	"context"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
)

// SnapshotAPI is the VolumeSnapshot API, optional: without it the
// controller serves volume targets and reports SnapshotAPIMissing for
// snapshot targets.
var SnapshotAPI = snapshotv1.SchemeGroupVersion.WithResource("volumesnapshots")

// Descriptor is the BackupJob controller as the operator's registry sees it.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:         "backupjob",
		Resource:     v1alpha1.GroupVersion.WithResource("backupjobs"),
		Subresources: []string{"status"},
		OptionalAPIs: []schema.GroupVersionResource{SnapshotAPI, PostgresClusterAPI},
		AddToScheme:  AddToScheme,
		Cache:        CacheByObject,
		Setup: func(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
			return NewReconciler(mgr, mgr.GetClient(), opts).SetupWithManager(mgr, opts.MaxConcurrentReconciles)
		},
	}
}

// AddToScheme registers the BackupJob and the types of its children,
// VolumeSnapshots included: registering a type needs no API server.
func AddToScheme(s *runtime.Scheme) error {
	if err := v1alpha1.AddToScheme(s); err != nil {
		return err
	}
	return snapshotv1.AddToScheme(s)
}

// CacheByObject keeps of Jobs, claims and ConfigMaps (the records of
// object-store backups) only those the operator manages, by its label. VolumeSnapshots are not listed here: the cache refuses a
// setting for a type the cluster does not serve, and the Descriptor's cache
// settings cannot depend on what is served, so where they are served the
// controller's watch caches them with the operator's defaults.
func CacheByObject() map[client.Object]children.CacheSetting {
	return map[client.Object]children.CacheSetting{
		&batchv1.Job{}:                  children.CacheConfig("", nil),
		&corev1.PersistentVolumeClaim{}: children.CacheConfig("", nil),
		&corev1.ConfigMap{}:             children.CacheConfig("", nil),
	}
}

// SetupWithManager registers the reconciler: it watches BackupJobs, the
// Jobs they control (runs and drills), and the claims, object-store
// backup records and, where served, snapshots labelled for them (backups
// have no owner reference).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	watches := []kit.Watch{
		r.loop.Owned(&batchv1.Job{}),
		kit.Mapped(&corev1.PersistentVolumeClaim{}, backupJobOf),
		kit.Mapped(&corev1.ConfigMap{}, backupJobOf),
	}
	if r.SnapshotsServed {
		watches = append(watches, kit.Mapped(&snapshotv1.VolumeSnapshot{}, backupJobOf))
	}
	if r.PostgresClustersServed {
		watches = append(watches, kit.Mapped(&v1alpha1.PostgresCluster{}, r.backupJobsOfCluster))
	}
	return r.loop.Setup(mgr, maxConcurrent, watches...)
}

// backupJobsOfCluster maps a PostgresCluster to the BackupJobs of its
// namespace that back it up, whose run fences it, or whose drill restored
// it: its fence, its instances' reports and its health are what their runs
// and drills wait on.
func (r *Reconciler) backupJobsOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha1.BackupJobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the BackupJobs of a PostgresCluster's namespace", "postgrescluster", klog.KObj(obj))
		return nil
	}
	pg, _ := obj.(*v1alpha1.PostgresCluster)
	var out []reconcile.Request
	for _, bj := range list.Items {
		if bj.Spec.Source.PostgresCluster == obj.GetName() || (pg != nil && fenceOf(bj.Name, pg) != nil) || metav1.IsControlledBy(obj, &bj) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: bj.Namespace, Name: bj.Name}})
		}
	}
	return out
}

// backupJobOf maps a backup or drill claim, or a snapshot, to its
// BackupJob, by label.
func backupJobOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1alpha1.BackupJobLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}
