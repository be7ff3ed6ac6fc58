// Package controller is the contract between the operator and the
// controllers of its kinds: a Descriptor says what one kind's controller
// needs (its API, scheme, cache, flags) and how it is set up. The kinds
// live one package each below this one (website, tenant, backupjob), built
// on the reconcile skeleton of package kit; the operator's registry lists
// their Descriptors.
package controller

import (
	"context"
	"flag"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/podsecurity"
)

// Descriptor is what one kind's controller contributes to the operator: its
// name, the API it serves, its scheme additions, its cache settings, its
// own flags and its setup. Adding a kind means a package under
// internal/controller that returns one, and one line in the operator's
// registry (docs/adding-a-kind.md).
type Descriptor struct {
	// Name selects the controller in --controllers and names its kustomize
	// component, deploy/components/<Name>, whose role.yaml holds the RBAC
	// it needs, its example examples/<Name>.yaml, its guide docs/<Name>.md
	// and its reference docs/api-<Name>.md.
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
	Cache func() map[client.Object]children.CacheSetting

	// Flags, when set, registers the controller's own command-line flags on
	// fs, bound to the controller's options, and returns the check of their
	// values that runs once they are parsed. The flags exist whether or not
	// --controllers runs the controller.
	Flags func(fs *flag.FlagSet) (validate func() error)

	// Setup registers the controller, its watches and its metrics with mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager, opts SetupOptions) error
}

// SetupOptions are the operator-wide settings every controller is set up
// with. What only one kind needs is that kind's flag (Descriptor.Flags).
type SetupOptions struct {
	// MaxConcurrentReconciles is the number of objects of the kind
	// reconciled at once.
	MaxConcurrentReconciles int
	// ClusterDomain is the DNS domain of the cluster's Services.
	ClusterDomain string
	// OperatorImage is the image whose binary runs in the pods the
	// operator makes for PostgreSQL (instance managers, base backups);
	// empty is platform.DefaultImage.
	OperatorImage string
	// Clock is the time source of everything that schedules or stamps.
	Clock clock.Clock
	// ServedOptionalAPIs says, for each of the Descriptor's OptionalAPIs,
	// whether the cluster serves it.
	ServedOptionalAPIs map[schema.GroupVersionResource]bool
	// PodSecurityVersion is the version of the Pod Security Standards that
	// the API server enforces, by which the pods the operator makes are
	// judged; the zero value is the latest the library knows.
	PodSecurityVersion podsecurity.Version
}
