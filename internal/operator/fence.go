package operator

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/internal/controller"
)

// The leader election timing, controller-runtime's defaults: a standby takes
// over a lease that was not renewed for leaseDuration; the leader gives up
// when it could not renew for renewDeadline.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
)

// LeaseGuard wraps the leader election lock and remembers when this process
// last renewed its lease. A process frozen (a long GC pause, a stopped VM, a
// network partition) may resume believing it leads while a standby has
// taken over; the guard tells it, by the clock, that its lease may be gone,
// so that it stops writing before a standby can have started.
//
// A standby acquires only after leaseDuration without renewal, as it
// observes it; the guard stops the old leader's writes after renewDeadline,
// five seconds earlier.
type LeaseGuard struct {
	resourcelock.Interface
	clock    clock.PassiveClock
	validFor time.Duration
	// renewedAt is when the last successful renewal was sent, in Unix
	// nanoseconds; 0 when this process does not hold the lease.
	renewedAt atomic.Int64
}

// NewLeaseGuard wraps lock.
func NewLeaseGuard(lock resourcelock.Interface, clk clock.PassiveClock) *LeaseGuard {
	return &LeaseGuard{Interface: lock, clock: clk, validFor: renewDeadline}
}

// Create records the acquisition of a new lease.
func (g *LeaseGuard) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := g.clock.Now()
	err := g.Interface.Create(ctx, record)
	g.record(err, record, sent)
	return err
}

// Update records a renewal, or a release when the holder is emptied.
func (g *LeaseGuard) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	sent := g.clock.Now()
	err := g.Interface.Update(ctx, record)
	g.record(err, record, sent)
	return err
}

func (g *LeaseGuard) record(err error, record resourcelock.LeaderElectionRecord, sent time.Time) {
	switch {
	case err != nil:
		// A failed renewal proves nothing either way; the deadline decides.
	case record.HolderIdentity == g.Identity():
		g.renewedAt.Store(sent.UnixNano())
	default:
		g.renewedAt.Store(0)
	}
}

// Holding returns nil while this process holds a lease that no standby can
// have taken, else an error that says why it must not write.
func (g *LeaseGuard) Holding() error {
	renewed := g.renewedAt.Load()
	if renewed == 0 {
		return fmt.Errorf("%w: this replica does not hold the leader election lease", controller.ErrNotLeader)
	}
	if age := g.clock.Since(time.Unix(0, renewed)); age > g.validFor {
		return fmt.Errorf("%w: the leader election lease was last renewed %s ago, more than %s", controller.ErrNotLeader, age.Round(time.Millisecond), g.validFor)
	}
	return nil
}

// LeaseIdentityEnv carries the leader election identity across a restart in
// place (see cmd/platform-operator): the new image of the same process may
// renew the lease its former image held, instead of waiting for it to
// expire. Nothing else sets it.
const LeaseIdentityEnv = "WEBSITE_OPERATOR_LEASE_IDENTITY"

// newLeaseLock builds the Lease lock as controller-runtime would, with an
// identity unique to this process and events about leadership in the
// Lease's namespace.
func newLeaseLock(config *rest.Config, scheme *runtime.Scheme, namespace, name string) (resourcelock.Interface, error) {
	if namespace == "" {
		data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return nil, fmt.Errorf("no --leader-election-namespace and not in a pod: %w", err)
		}
		namespace = strings.TrimSpace(string(data))
	}
	id := os.Getenv(LeaseIdentityEnv)
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		id = host + "_" + string(uuid.NewUUID())
		// A restart in place inherits it.
		if err := os.Setenv(LeaseIdentityEnv, id); err != nil {
			return nil, err
		}
	}
	config = rest.CopyConfig(config)
	config.UserAgent += " leader-election"
	// A hung request must not outlast the renew deadline.
	config.Timeout = renewDeadline / 2
	core, err := typedcorev1.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: core.Events(namespace)})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "platform-operator"})
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, core, coordination,
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
}

// fencedClient refuses writes unless the guard says this process holds the
// lease. Reads pass through.
type fencedClient struct {
	client.Client
	guard interface{ Holding() error }
}

func (c *fencedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *fencedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *fencedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *fencedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *fencedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *fencedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.guard.Holding(); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *fencedClient) Status() client.SubResourceWriter {
	return &fencedStatusWriter{SubResourceWriter: c.Client.Status(), guard: c.guard}
}

type fencedStatusWriter struct {
	client.SubResourceWriter
	guard interface{ Holding() error }
}

func (w *fencedStatusWriter) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := w.guard.Holding(); err != nil {
		return err
	}
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w *fencedStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := w.guard.Holding(); err != nil {
		return err
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *fencedStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.guard.Holding(); err != nil {
		return err
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *fencedStatusWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := w.guard.Holding(); err != nil {
		return err
	}
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}
