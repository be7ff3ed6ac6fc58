package website_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
			writes = &writeLog{byNamespace: map[string]int{}, byKind: map[writeKey]int{}, beforeCreate: map[string]func(context.Context, client.Object){}}
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

// writeLog counts the reconciler's write calls per namespace and per kind,
// status writes included and dry runs not, and lets a test act just before
// the reconciler creates an object. The writes made with a context from
// countingWrites are also counted apart: those of the reconciles a test calls
// itself, told from those of the manager's reconciles.
type writeLog struct {
	mu           sync.Mutex
	byNamespace  map[string]int
	byKind       map[writeKey]int
	beforeCreate map[string]func(context.Context, client.Object)
}

// writeKey is a namespace and a kind written to, with "/status" for the
// status subresource.
type writeKey struct{ namespace, kind string }

// ownWritesKey is the context key of the record of countingWrites.
type ownWritesKey struct{}

// ownWrites records the writes made with the context of countingWrites.
type ownWrites struct {
	mu     sync.Mutex
	writes []string
}

// countingWrites returns ctx marked so that the reconciler's writes made with
// it (or a context derived from it) are recorded in the returned record.
func countingWrites(ctx context.Context) (context.Context, *ownWrites) {
	w := &ownWrites{}
	return context.WithValue(ctx, ownWritesKey{}, w), w
}

// list names the writes recorded, as "Kind name".
func (w *ownWrites) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

func (l *writeLog) count(ns string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byNamespace[ns]
}

// countKind is the number of writes to objects of kind (such as
// "Deployment" or "Website/status") in ns.
func (l *writeLog) countKind(ns, kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byKind[writeKey{ns, kind}]
}

func (l *writeLog) add(ctx context.Context, obj client.Object, subresource string) {
	kind := "unknown"
	if gvk, err := apiutil.GVKForObject(obj, suite.Scheme); err == nil {
		kind = gvk.Kind
	}
	if subresource != "" {
		kind += "/" + subresource
	}
	if own, ok := ctx.Value(ownWritesKey{}).(*ownWrites); ok {
		own.mu.Lock()
		own.writes = append(own.writes, kind+" "+obj.GetName())
		own.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byNamespace[obj.GetNamespace()]++
	l.byKind[writeKey{obj.GetNamespace(), kind}]++
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
			l.add(ctx, obj, "")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.add(ctx, obj, "")
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.add(ctx, obj, "")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if len((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) == 0 {
				l.add(ctx, applyTarget(obj), "")
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.add(ctx, obj, "")
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.add(ctx, obj, subResource)
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, subResource string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.add(ctx, obj, subResource)
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

// restartedReconciler returns a Website reconciler on the suite's manager as
// the operator has one after a restart: it remembers nothing it verified,
// and reads the manager's cache. It is not set up with the manager, so only
// the test's own calls run it; its reads past the cache are counted by kind.
func restartedReconciler() (*website.Reconciler, *apiReads) {
	reads := &apiReads{Reader: manager.GetAPIReader(), byKind: map[string]int{}}
	r := website.NewReconciler(readsCounted{Manager: manager, reads: reads}, writes.wrap(asWithWatch(manager.GetClient())), controller.SetupOptions{
		ClusterDomain: "cluster.local",
		Clock:         clock.RealClock{},
	})
	return r, reads
}

// readsCounted is a manager whose API reader (the reads past the cache) is
// reads.
type readsCounted struct {
	ctrl.Manager
	reads *apiReads
}

func (m readsCounted) GetAPIReader() client.Reader { return m.reads }

// apiReads counts the reads made with a reader, by kind.
type apiReads struct {
	client.Reader
	mu     sync.Mutex
	byKind map[string]int
}

func (r *apiReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.note(obj)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *apiReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.note(list)
	return r.Reader.List(ctx, list, opts...)
}

func (r *apiReads) note(obj runtime.Object) {
	kind := "unknown"
	if gvk, err := apiutil.GVKForObject(obj, suite.Scheme); err == nil {
		kind = gvk.Kind
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKind[kind]++
}

// count is the number of reads of objects of kind ("Deployment"), or of
// lists ("DeploymentList").
func (r *apiReads) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byKind[kind]
}
