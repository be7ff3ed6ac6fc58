package website_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite) runs a real kube-apiserver and etcd
// (no controller manager, so no garbage collector and no Deployment
// controller: tests set Deployment status themselves) with the reconciler in
// a manager, configured as in production.
var (
	suite      envsuite.Suite
	k8sClient  client.Client // the test's own client, uncached
	writes     *writeLog     // the reconciler's writes
	reconciler *website.Reconciler
	manager    ctrl.Manager // runs reconciler; a test may build another reconciler on it
)

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"website"},
		AddToScheme: []func(*runtime.Scheme) error{websitev1.AddToScheme},
		Cache:       website.Descriptor().Cache(),
		Setup: func(s *envsuite.Suite) error {
			k8sClient, manager = s.Client, s.Manager
			writes = &writeLog{byNamespace: map[string]int{}, beforeCreate: map[string]func(context.Context, client.Object){}}
			reconciler = website.NewReconciler(manager, writes.wrap(asWithWatch(manager.GetClient())), controller.SetupOptions{
				ClusterDomain: "cluster.local",
				Clock:         clock.RealClock{},
			})
			reconciler.ConflictRecheckInterval = time.Second
			return reconciler.SetupWithManager(manager, 4)
		},
	}))
}

// needsAPIServer skips a test in -short mode.
func needsAPIServer(t *testing.T) {
	t.Helper()
	suite.NeedsAPIServer(t)
}

// asWithWatch gives the manager's client the Watch method that the
// interceptor's signature asks for; the reconciler never watches through it.
func asWithWatch(c client.Client) client.WithWatch {
	return withoutWatch{c}
}

type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler does not watch through its client")
}

// writeLog counts the reconciler's write calls per namespace, status writes
// included and dry runs not, and lets a test act just before the reconciler creates an
// object.
type writeLog struct {
	mu           sync.Mutex
	byNamespace  map[string]int
	beforeCreate map[string]func(context.Context, client.Object)
}

func (l *writeLog) count(ns string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byNamespace[ns]
}

func (l *writeLog) add(obj client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byNamespace[obj.GetNamespace()]++
}

// onCreate runs hook before each create the reconciler makes in ns.
func (l *writeLog) onCreate(ns string, hook func(context.Context, client.Object)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beforeCreate[ns] = hook
}

func (l *writeLog) hook(ns string) func(context.Context, client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beforeCreate[ns]
}

// wrap returns c with every write counted.
func (l *writeLog) wrap(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if hook := l.hook(obj.GetNamespace()); hook != nil {
				hook(ctx, obj)
			}
			l.add(obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.add(obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.add(obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if len((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) == 0 {
				l.add(applyTarget(obj))
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.add(obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.add(obj)
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, subResource string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.add(obj)
			return c.SubResource(subResource).Update(ctx, obj, opts...)
		},
	})
}

// applyTarget finds the namespace of an apply configuration of any form.
func applyTarget(obj runtime.ApplyConfiguration) client.Object {
	target := &metav1.PartialObjectMetadata{}
	data, err := json.Marshal(obj)
	if err == nil {
		_ = json.Unmarshal(data, target)
	}
	return target
}
