package tenant_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite) runs a real kube-apiserver and etcd
// with the Tenant reconciler in a manager. There is no controller manager: no
// garbage collector (owned objects stay after their owner goes) and no
// namespace controller (a deleted namespace stays Terminating), which is
// what the deletion tests need to see a slow namespace. The API server
// issues and reviews ServiceAccount tokens and authorizes with RBAC.
var (
	suite      envsuite.Suite
	restConfig *rest.Config
	k8sClient  client.Client // the test's own client, uncached, as cluster admin
	fakeClock  *clocktesting.FakeClock
	calls      *callLog // the reconciler's reads of Tenants and its writes
)

// deletionGracePeriod is the reconciler's, short so that the tests see a
// Tenant go while its namespace is still terminating.
const deletionGracePeriod = 20 * time.Second

// deployerRole is a ClusterRole that may create Deployments, allowed to
// Tenants in this suite.
const deployerRole = "test-deployer"

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, envsuite.Options{
		Components:  []string{"tenant"},
		AddToScheme: []func(*runtime.Scheme) error{tenantv1.AddToScheme},
		Cache:       tenant.CacheByObject(),
		Setup: func(s *envsuite.Suite) error {
			restConfig, k8sClient = s.Config, s.Client
			fakeClock = clocktesting.NewFakeClock(time.Now())
			calls = &callLog{}
			reconciler := tenant.NewReconciler(s.Manager, calls.wrap(s.Manager.GetClient()), controller.SetupOptions{Clock: fakeClock})
			reconciler.CAData = restConfig.CAData
			reconciler.DeletionGracePeriod = deletionGracePeriod
			// The built-in roles are aggregated by kube-controller-manager,
			// which envtest lacks: they grant nothing here. The tests that
			// need a role that grants something bind this one, made by the
			// suite.
			reconciler.AllowedOwnerRoles = append(slices.Clone(tenant.DefaultAllowedOwnerRoles), deployerRole)
			reconciler.ConflictRecheckInterval = time.Second
			if err := reconciler.SetupWithManager(s.Manager, 2); err != nil {
				return err
			}
			return s.Client.Create(context.Background(), &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: deployerRole},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "create"}}},
			})
		},
	}))
}

// needsAPIServer skips a test in -short mode.
func needsAPIServer(t *testing.T) {
	t.Helper()
	suite.NeedsAPIServer(t)
}

// callLog records, in order, the reconciler's reads of Tenants through its
// client (each reconcile starts with one) and its writes, with the reconcile
// that made each: what a reconcile wrote is known once it has ended, and it
// has ended when the next reconcile of the same Tenant starts (a Tenant is
// never reconciled twice at once).
type callLog struct {
	mu    sync.Mutex
	calls []call
}

// call is one call of the reconciler's client.
type call struct {
	reconcile types.UID // "" outside a reconcile
	verb      string    // get, create, update, patch, apply, delete, or the subresource's: "status patch"
	kind      string
	key       types.NamespacedName
}

// mark is where the calls from now on begin, for since.
func (l *callLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

// since returns the calls from mark on.
func (l *callLog) since(mark int) []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls[mark:])
}

func (l *callLog) add(ctx context.Context, verb string, obj runtime.Object, key types.NamespacedName) {
	kind := "unknown"
	if gvk, err := apiutil.GVKForObject(obj, suite.Scheme); err == nil {
		kind = gvk.Kind
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call{reconcile: crcontroller.ReconcileIDFromContext(ctx), verb: verb, kind: kind, key: key})
}

// wrap returns c with its reads of Tenants and all its writes recorded.
func (l *callLog) wrap(c client.Client) client.Client {
	return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*tenantv1.Tenant); ok {
				l.add(ctx, "get", obj, key)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			l.add(ctx, "create", obj, client.ObjectKeyFromObject(obj))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.add(ctx, "update", obj, client.ObjectKeyFromObject(obj))
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.add(ctx, "patch", obj, client.ObjectKeyFromObject(obj))
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if len((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) == 0 {
				target := &metav1.PartialObjectMetadata{}
				if data, err := json.Marshal(obj); err == nil {
					_ = json.Unmarshal(data, target)
				}
				l.add(ctx, "apply", target, client.ObjectKeyFromObject(target))
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.add(ctx, "delete", obj, client.ObjectKeyFromObject(obj))
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, subResource string, obj, subResourceObj client.Object, opts ...client.SubResourceCreateOption) error {
			l.add(ctx, subResource+" create", obj, client.ObjectKeyFromObject(obj))
			return c.SubResource(subResource).Create(ctx, obj, subResourceObj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.add(ctx, subResource+" patch", obj, client.ObjectKeyFromObject(obj))
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, subResource string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.add(ctx, subResource+" update", obj, client.ObjectKeyFromObject(obj))
			return c.SubResource(subResource).Update(ctx, obj, opts...)
		},
	})
}

// withoutWatch gives the manager's client the Watch method that the
// interceptor's signature asks for; the reconciler never watches through it.
type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler does not watch through its client")
}
