// Package controller is the home of the operator's controllers, one package
// per kind below it (website, tenant, backupjob). This package holds only
// what each of them hands to the operator: a Descriptor.
package controller

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/podsecurity"
)

// Descriptor is what one kind's controller contributes to the operator: its
// name, the API it serves, its scheme additions, its cache settings and its
// setup. Adding a kind means a package under internal/controller that
// returns one, and one line in the operator's registry.
type Descriptor struct {
	// Name selects the controller in --controllers and names its kustomize
	// component, deploy/components/<Name>, whose role.yaml holds the RBAC
	// it needs.
	Name string

	// Resource is the custom resource the controller reconciles. The
	// controller runs only where the API server serves it.
	Resource schema.GroupVersionResource
	// Subresources the served resource must have, such as "status": a
	// CRD without them is an older or foreign definition of the kind.
	Subresources []string
	// ClusterWide is true for a controller that needs every namespace (a
	// cluster-scoped kind that manages namespaces): it is skipped when the
	// operator watches only some namespaces.
	ClusterWide bool

	// OptionalAPIs are APIs the controller uses when the cluster serves
	// them and does without otherwise; their absence is reported, not
	// fatal.
	OptionalAPIs []schema.GroupVersionResource

	// AddToScheme registers the types the controller reads and writes.
	AddToScheme func(*runtime.Scheme) error
	// Cache returns the cache settings of the object types the controller
	// watches. Two controllers that watch the same type must return the same
	// settings for it; the operator refuses to start otherwise.
	Cache func() map[client.Object]CacheSetting

	// Setup registers the controller, its watches and its metrics with mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager, opts SetupOptions) error
}

// SetupOptions are the operator-wide settings a controller is set up with.
type SetupOptions struct {
	// MaxConcurrentReconciles is the number of objects of the kind
	// reconciled at once.
	MaxConcurrentReconciles int
	// ClusterDomain is the DNS domain of the cluster's Services.
	ClusterDomain string
	// Clock is the time source of everything that schedules or stamps.
	Clock clock.Clock
	// TenantAPIServer and TenantAPIServerCA, when set, are the API server's
	// address and CA (PEM) in Tenants' credential kubeconfigs.
	TenantAPIServer   string
	TenantAPIServerCA []byte
	// AdoptTutorial lets the Website controller take over what the
	// tutorial's kopf operator made, for every Website (--adopt-tutorial).
	AdoptTutorial bool
	// ServedOptionalAPIs says, for each of the Descriptor's OptionalAPIs,
	// whether the cluster serves it.
	ServedOptionalAPIs map[schema.GroupVersionResource]bool
	// PodSecurityVersion is the version of the Pod Security Standards that
	// the API server enforces, by which the pods the operator makes are
	// judged; the zero value is the latest the library knows.
	PodSecurityVersion podsecurity.Version
}

// ErrNotLeader is returned, wrapped, for a write that the operator refused
// to send because this replica cannot be sure it still holds the leader
// election lease. A reconcile that meets it stops without reporting
// anything: the leader does the work, and the status and events are its to
// write.
var ErrNotLeader = errors.New("not the leader")

// StandDown ends a reconcile that met ErrNotLeader: without an error, which
// controller-runtime would log as a failure with a stack trace although
// nothing failed, and with a retry in a second in case this replica keeps
// its lease after all. The leader does the work.
func StandDown(ctx context.Context, err error) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("Reconcile stopped: this replica may no longer hold the leader election lease", "error", err.Error())
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

// CacheSetting is how a controller asks the shared cache to hold one object
// type: the cache's setting, and the name of its transform. The cache holds
// one copy of each type, so two controllers that watch one type must
// transform it alike, and Go cannot tell two functions apart when they are
// closures of one function literal (every children.CacheConfig) or
// instances of one generic function of the same shape: the name tells.
type CacheSetting struct {
	cache.ByObject
	// TransformName names ByObject.Transform: one name, one function.
	TransformName string
}

// ByObject is the cache's part of settings, for the cache options of a
// manager that runs one controller in tests.
func ByObject(settings map[client.Object]CacheSetting) map[client.Object]cache.ByObject {
	out := make(map[client.Object]cache.ByObject, len(settings))
	for obj, setting := range settings {
		out[obj] = setting.ByObject
	}
	return out
}
