package backupjob

import (
	"context"

	"github.com/go-logr/logr"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/platform"
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
		OptionalAPIs: []schema.GroupVersionResource{SnapshotAPI},
		AddToScheme:  AddToScheme,
		Cache:        CacheByObject,
		Setup:        setup,
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

// CacheByObject keeps of Jobs and claims only those the operator manages,
// by its label. VolumeSnapshots are not listed here: the cache refuses a
// setting for a type the cluster does not serve, and the Descriptor's cache
// settings cannot depend on what is served, so where they are served the
// controller's watch caches them with the operator's defaults.
func CacheByObject() map[client.Object]controller.CacheSetting {
	return map[client.Object]controller.CacheSetting{
		&batchv1.Job{}:                  children.CacheConfig("", nil),
		&corev1.PersistentVolumeClaim{}: children.CacheConfig("", nil),
	}
}

// CacheOptions are the cache options of a manager that runs only the
// BackupJob controller, for tests.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: controller.ByObject(CacheByObject())}
}

func setup(_ context.Context, mgr ctrl.Manager, opts controller.SetupOptions) error {
	return NewReconciler(mgr, mgr.GetClient(), opts).SetupWithManager(mgr)
}

// NewReconciler returns the BackupJob reconciler of mgr, reading and writing
// with c: the manager's client, or another one in tests.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *Reconciler {
	recorder := mgr.GetEventRecorder(platform.Name)
	r := &Reconciler{
		Client:                  c,
		APIReader:               mgr.GetAPIReader(),
		Children:                children.NewManagerWithClient(mgr, c, "BackupJob", recorder),
		Status:                  children.NewStatusWriter(c).ReadingLiveFrom(mgr.GetAPIReader()),
		Recorder:                recorder,
		Clock:                   opts.Clock,
		SnapshotsServed:         opts.ServedOptionalAPIs[SnapshotAPI],
		PodSecurityVersion:      opts.PodSecurityVersion,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}
	r.defaults()
	return r
}

func (r *Reconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.RecheckInterval == 0 {
		r.RecheckInterval = defaultRecheckInterval
	}
	if r.DeletionGracePeriod == 0 {
		r.DeletionGracePeriod = defaultDeletionGracePeriod
	}
}

// jobEvents reconciles the BackupJob that controls a Job: a run's or a
// drill's.
func jobEvents() handler.EventHandler {
	return controller.EnqueueControllingOwner(v1alpha1.GroupVersion.WithKind("BackupJob").GroupKind(), meta.RESTScopeNameNamespace)
}

// SetupWithManager registers the reconciler: it watches BackupJobs (spec
// changes and deletion), the Jobs they control, and the claims and, where
// served, snapshots labelled for them (backups have no owner reference).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.defaults()
	r.retries = controller.NewRetries()
	if err := r.Status.ForgetDeleted(context.Background(), mgr.GetCache(), &v1alpha1.BackupJob{}); err != nil {
		return err
	}
	// Not For: see controller.PendingFirst.
	b := ctrl.NewControllerManagedBy(mgr).
		Named("backupjob").
		Watches(&v1alpha1.BackupJob{}, controller.PendingFirst(func(bj *v1alpha1.BackupJob) int64 { return bj.Status.ObservedGeneration }),
			// Status writes need no reconcile; spec changes (runNow
			// among them) and a deletion do.
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		// A run's progress is news about a BackupJob already started: it
		// goes before BackupJobs still waiting for their first reconcile
		// (see controller.ChildEventPriority).
		Watches(&batchv1.Job{}, controller.WithChildEventPriority(jobEvents())).
		Watches(&corev1.PersistentVolumeClaim{}, controller.WithChildEventPriority(handler.EnqueueRequestsFromMapFunc(backupJobOf)))
	if r.SnapshotsServed {
		b = b.Watches(&snapshotv1.VolumeSnapshot{}, controller.WithChildEventPriority(handler.EnqueueRequestsFromMapFunc(backupJobOf)))
	}
	return b.
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: r.retries}).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			logger := mgr.GetLogger().WithValues("controller", "backupjob")
			if req != nil {
				logger = logger.WithValues("backupjob", klog.KRef(req.Namespace, req.Name))
			}
			return logger
		}).
		Complete(r)
}

// deletionStarted lets through the update that marks a BackupJob deleted,
// in case its generation does not change with it.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
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
