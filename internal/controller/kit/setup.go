package kit

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Watch is one watch of a kind's controller besides its own objects: of
// objects whose changes are news about objects of the kind.
type Watch struct {
	Object     client.Object
	Handler    handler.EventHandler
	Predicates []predicate.Predicate
}

// Owned watches the objects of obj's type that an object of the kind
// controls (its owned children): a child edited or deleted by hand, or
// whose state changed, reconciles its owner.
func (l *Loop[T, P, S, PS]) Owned(obj client.Object, predicates ...predicate.Predicate) Watch {
	return Watch{Object: obj, Handler: EnqueueControllingOwner(l.groupKind(), l.scope()), Predicates: predicates}
}

// Mapped watches the objects of obj's type that toOwner maps to objects of
// the kind, by label or name: children that carry no owner reference (they
// hold data) and objects that are not children at all.
func Mapped(obj client.Object, toOwner handler.MapFunc, predicates ...predicate.Predicate) Watch {
	return Watch{Object: obj, Handler: handler.EnqueueRequestsFromMapFunc(toOwner), Predicates: predicates}
}

// Setup registers l with mgr as the controller of its kind: it watches the
// kind's objects (spec and annotation changes and the start of a deletion;
// status writes, the operator's own among them, need no reconcile), and
// watches at ChildEventPriority, with maxConcurrent reconciles at once.
func (l *Loop[T, P, S, PS]) Setup(mgr ctrl.Manager, maxConcurrent int, watches ...Watch) error {
	gvk, err := apiutil.GVKForObject(P(new(T)), mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("kind of the %s controller: %w", l.opts.Name, err)
	}
	if gvk.GroupKind() != l.opts.Kind {
		return fmt.Errorf("the %s controller's loop is for %s, not %s", l.opts.Name, l.opts.Kind, gvk.GroupKind())
	}
	newList := func() (client.ObjectList, error) {
		list, err := mgr.GetScheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return nil, fmt.Errorf("list type of %s: %w", gvk, err)
		}
		return list.(client.ObjectList), nil
	}
	l.retries = NewRetries()
	if err := l.writer.ForgetDeleted(context.Background(), mgr.GetCache(), P(new(T))); err != nil {
		return err
	}
	register()
	conditions.set(l.opts.Name, l.countConditions(mgr.GetCache(), newList))

	// Not For: its handler would queue every object listed at start-up
	// behind later changes, those with work pending too (PendingFirst).
	var own handler.EventHandler = PendingFirst(func(obj P) int64 { return l.status(obj).GetObservedGeneration() })
	if l.opts.TimedWork {
		own = AsDueWork(own)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(l.opts.Name).
		Watches(P(new(T)), own,
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted)))
	for _, w := range watches {
		// A child's change is news about an object already built: it goes
		// before objects still waiting for their first reconcile.
		b = b.Watches(w.Object, WithChildEventPriority(w.Handler), builder.WithPredicates(w.Predicates...))
	}
	return b.WithOptions(crcontroller.Options{MaxConcurrentReconciles: maxConcurrent, RateLimiter: l.retries}).
		WithLogConstructor(func(req *reconcile.Request) logr.Logger {
			logger := mgr.GetLogger().WithValues("controller", l.opts.Name)
			if req != nil {
				logger = logger.WithValues(l.opts.Name, klog.KRef(req.Namespace, req.Name))
			}
			return logger
		}).
		Complete(l)
}

// countConditions counts the kind's objects in the cache by condition,
// without copying them (it only reads).
func (l *Loop[T, P, S, PS]) countConditions(c client.Reader, newList func() (client.ObjectList, error)) conditionCounter {
	return func(ctx context.Context) (map[string]map[metav1.ConditionStatus]int, error) {
		list, err := newList()
		if err != nil {
			return nil, err
		}
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.opts.Name, err)
		}
		counts := map[string]map[metav1.ConditionStatus]int{}
		err = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(P); ok {
				countConditions(counts, l.opts.Conditions, l.status(obj).GetConditions(), obj.GetGeneration())
			}
			return nil
		})
		return counts, err
	}
}

func (l *Loop[T, P, S, PS]) groupKind() schema.GroupKind { return l.opts.Kind }

func (l *Loop[T, P, S, PS]) scope() meta.RESTScopeName {
	if l.opts.Namespaced {
		return meta.RESTScopeNameNamespace
	}
	return meta.RESTScopeNameRoot
}

// deletionStarted lets through the update that marks an object deleted, in
// case its generation does not change with it.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}
