package children

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/platform-operator/internal/platform"
)

// Action is what Ensure did to a child, or why it did nothing.
type Action string

const (
	// Unchanged: the child already matched its desired state.
	Unchanged Action = "Unchanged"
	// Created: the child did not exist and was created.
	Created Action = "Created"
	// Adopted: an object that was not ours was taken over, as the caller's
	// AdoptIf allowed.
	Adopted Action = "Adopted"
	// Updated: the desired state changed (the owner's spec did) and the
	// child was updated to it.
	Updated Action = "Updated"
	// Restored: someone changed a field the operator sets; it was put back.
	Restored Action = "Restored"
	// Replaced: what someone else put into the child made an apply
	// impossible; their fields were dropped from its spec.
	Replaced Action = "Replaced"
	// Conflict: an object of the child's name exists and is not ours. It was
	// left untouched.
	Conflict Action = "Conflict"
	// Invalid: the API server refused the desired state itself. Retrying
	// cannot help until the owner's spec changes.
	Invalid Action = "Invalid"
	// Failed: the child could not be read or written, for a reason that may
	// pass (the API server is down, a webhook refused, RBAC is missing).
	Failed Action = "Failed"
)

// Result is what Ensure saw and did.
type Result struct {
	Action Action
	// Exists is true when the child exists and is ours; the object passed to
	// Ensure then holds it as last seen.
	Exists bool
	// Message says what happened, for a condition or an event, when Action
	// is Conflict, Invalid or Failed.
	Message string
	// Err is set when Action is Invalid or Failed, or when the write was
	// refused because this replica may have lost its leadership
	// (platform.ErrNotLeader).
	Err error
}

// Wrote reports whether Ensure wrote the child.
func (r Result) Wrote() bool {
	switch r.Action {
	case Created, Adopted, Updated, Restored, Replaced:
		return true
	}
	return false
}

// Manager handles the children of the resources of one kind.
type Manager struct {
	// Client reads from the operator's cache and writes to the API server.
	client client.Client
	// apiReader reads from the API server, on the rare paths where the cache
	// cannot answer: an object in the way that the cache does not hold, the
	// full field ownership of a child before it is converted or replaced, and
	// a child the cache holds partially (PartialCopy) when it must be
	// compared.
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	ownerKind string
	differ    *differ
	verified  *verifiedCache
	refused   *refusals
	pending   *pendingCreates
}

// NewManager returns the children manager of a kind's controller. ownerKind
// names the kind in metrics and messages.
func NewManager(mgr ctrl.Manager, ownerKind string, recorder events.EventRecorder) *Manager {
	return newManager(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetCache(), mgr.GetScheme(), recorder, ownerKind)
}

// NewManagerWithClient is NewManager with another client than the
// manager's: a wrapper that counts writes in tests.
func NewManagerWithClient(mgr ctrl.Manager, c client.Client, ownerKind string, recorder events.EventRecorder) *Manager {
	return newManager(c, mgr.GetAPIReader(), mgr.GetCache(), mgr.GetScheme(), recorder, ownerKind)
}

// newManager returns a Manager whose client reads from the cache that
// informers feeds; informers may be nil in unit tests.
func newManager(c client.Client, apiReader client.Reader, informers cache.Informers, scheme *runtime.Scheme, recorder events.EventRecorder, ownerKind string) *Manager {
	m := &Manager{
		client:    c,
		apiReader: apiReader,
		scheme:    scheme,
		recorder:  recorder,
		ownerKind: ownerKind,
		differ:    newDiffer(scheme),
		verified:  newVerifiedCache(),
		refused:   newRefusals(clock.RealClock{}),
		pending:   newPendingCreates(informers, clock.RealClock{}),
	}
	// A child the garbage collector or a person deletes is forgotten with
	// it, rather than when the verifiedCache is full.
	m.pending.deleted = m.verified.forget
	return m
}

// verify remembers live, a child of the desired state in, as verified, and
// makes sure its type's informer tells when it is deleted.
func (m *Manager) verify(ctx context.Context, live client.Object, in *intent) {
	if err := m.pending.watch(ctx, in.gvk, live); err != nil {
		// Forgotten when the verifiedCache is full instead.
		log.FromContext(ctx).V(1).Info("Deleted children of this kind are not forgotten one by one", "kind", in.gvk.Kind, "error", err.Error())
	}
	m.verified.remember(live, in)
}

// EnsureOption changes how Ensure treats one child.
type EnsureOption func(*ensureOptions)

type ensureOptions struct {
	ownedBy         func(client.Object) bool
	adoptIf         func(client.Object) bool
	judge           func(client.Object) error
	quietCreate     bool
	eventsOnRelated bool
	created         *Creations
}

// OwnedBy replaces the default test of ownership (the owner is the child's
// controller) for children that carry no owner reference because they hold
// user data, such as a Tenant's namespaces.
func OwnedBy(ours func(live client.Object) bool) EnsureOption {
	return func(o *ensureOptions) { o.ownedBy = ours }
}

// AdoptIf lets Ensure take over an existing object that is not ours when
// adopt says so. The object is then applied like any other child.
func AdoptIf(adopt func(live client.Object) bool) EnsureOption {
	return func(o *ensureOptions) { o.adoptIf = adopt }
}

// Judge lets Ensure write the child only when judge accepts the desired
// state, decoded as a typed object: a check of the operator's own that
// admission may not make (the cluster may enforce less). It is asked only
// before a write (create, update, restore or adoption), so a child found as
// desired costs no decoding. Refused, nothing is written, the child stays
// as it is, and the Result is Invalid with judge's error.
func Judge(judge func(desired client.Object) error) EnsureOption {
	return func(o *ensureOptions) { o.judge = judge }
}

// WithoutCreateEvent creates the child without a Normal event: for children
// whose creation is no news to the user (a Website's Service).
func WithoutCreateEvent() EnsureOption {
	return func(o *ensureOptions) { o.quietCreate = true }
}

// Ensure makes the child described by desired exist and match it. desired
// is an apply configuration that carries the child's name, namespace,
// labels (including platform.ManagedByLabel) and, unless OwnedBy is given,
// the owner's controller reference. live is an empty object of the child's
// type; it receives the child as last seen.
func (m *Manager) Ensure(ctx context.Context, owner client.Object, desired runtime.ApplyConfiguration, live client.Object, opts ...EnsureOption) Result {
	o := ensureOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.ownedBy == nil {
		o.ownedBy = func(obj client.Object) bool { return metav1.IsControlledBy(obj, owner) }
	}

	intent, err := newIntent(desired)
	if err != nil {
		return failed(fmt.Errorf("desired %T: %w", desired, err))
	}
	kind := intent.gvk.Kind

	err = m.client.Get(ctx, intent.key, live)
	if apierrors.IsNotFound(err) && m.pending.fill(intent.gvk, intent.key, live) {
		// Created by an earlier reconcile, not yet in the cache: it exists
		// as the create answered. Whose it is is told below as for any
		// child: another owner's reconcile may have created it.
		err = nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return m.create(ctx, owner, intent, live, o)
	case err != nil:
		return failed(fmt.Errorf("get %s %s: %w", kind, intent.key.Name, err))
	case o.ownedBy(live):
		return m.update(ctx, owner, intent, live, o)
	case o.adoptIf != nil && o.adoptIf(live):
		// Adopted only as the API server has it, not as the cache last
		// saw it.
		return m.claim(ctx, owner, intent, live, o, "adopt")
	}
	return conflict(kind, intent.key.Name, live, m.ownerKind)
}

// create makes a child that the cache does not have. An AlreadyExists answer
// means either that the cache lags behind the operator's own create, or that
// someone else's object is in the way: a live read tells which.
func (m *Manager) create(ctx context.Context, owner client.Object, in *intent, live client.Object, o ensureOptions) Result {
	kind := in.gvk.Kind
	if refused, ok := m.refused.lookup(in); ok {
		return refused
	}
	if err := in.decodeInto(live); err != nil {
		return failed(err)
	}
	if r, judged := m.judge(in, live, o); judged {
		resetObject(live)
		return r
	}
	if err := m.pending.expect(ctx, in.gvk, live); err != nil {
		return failed(err)
	}
	err := m.client.Create(ctx, live, client.FieldOwner(platform.Name))
	if err == nil {
		m.pending.created(in.gvk, live)
		m.refused.forget(in)
		// live is now the child as the API server stored it from the
		// desired state: its next sight in the cache needs no comparison,
		// nor do the status updates after it.
		m.verify(ctx, live, in)
		countWrite(m.ownerKind, kind, "create")
		switch {
		case o.created != nil:
			o.created.add(kind, in.key)
		case !o.quietCreate:
			m.recorder.Eventf(owner, live, corev1.EventTypeNormal, kind+"Created", "Create", "%s %s created", kind, in.key.Name)
		}
		return Result{Action: Created, Exists: true}
	}
	// Nothing was created: there is nothing to wait for.
	m.pending.observed(in.gvk, in.key)
	switch {
	case errors.Is(err, platform.ErrNotLeader):
		return Result{Action: Failed, Err: err}
	case apierrors.IsInvalid(err):
		return m.refuse(in, err)
	case !apierrors.IsAlreadyExists(err):
		return failed(fmt.Errorf("create %s %s: %w", kind, in.key.Name, err))
	}

	return m.claim(ctx, owner, in, live, o, "conflict")
}

// claim reads the existing child from the API server and updates it when
// it is the owner's (the cache had not yet seen the operator's own earlier
// create), adopts it when the caller allows, or reports the conflict.
// reason says why it is read, for the count of reads past the cache.
func (m *Manager) claim(ctx context.Context, owner client.Object, in *intent, live client.Object, o ensureOptions, reason string) Result {
	kind := in.gvk.Kind
	resetObject(live)
	countRead(m.ownerKind, kind, reason)
	if err := m.apiReader.Get(ctx, in.key, live); err != nil {
		return failed(fmt.Errorf("get %s %s from the API server: %w", kind, in.key.Name, err))
	}
	switch {
	case o.ownedBy(live):
		return m.update(ctx, owner, in, live, o)
	case o.adoptIf != nil && o.adoptIf(live):
		return m.adopt(ctx, owner, in, live, o)
	}
	return conflict(kind, in.key.Name, live, m.ownerKind)
}

// update applies in when live differs from it.
func (m *Manager) update(ctx context.Context, owner client.Object, in *intent, live client.Object, o ensureOptions) Result {
	kind := in.gvk.Kind
	if m.verified.matches(live, in) {
		return Result{Action: Unchanged, Exists: true}
	}
	action := Updated
	if liveHash(live) == in.hash {
		if untouchedSinceCreated(live, in) {
			m.verify(ctx, live, in)
			return Result{Action: Unchanged, Exists: true}
		}
		if isPartial(live) {
			// The cache holds the child without fields the comparison reads.
			whole, err := m.readWhole(ctx, in, live)
			if err != nil {
				// live, as cached, still tells the caller the child's status.
				r := failed(fmt.Errorf("get %s %s to compare it with its desired state: %w", kind, in.key.Name, err))
				r.Exists = true
				return r
			}
			reflect.ValueOf(live).Elem().Set(reflect.ValueOf(whole).Elem())
			if m.verified.matches(live, in) {
				return Result{Action: Unchanged, Exists: true}
			}
		}
		differs, err := m.differ.differs(in, live)
		if err != nil {
			return failed(fmt.Errorf("compare %s %s with its desired state: %w", kind, in.key.Name, err))
		}
		if !differs {
			m.verify(ctx, live, in)
			return Result{Action: Unchanged, Exists: true}
		}
		action = Restored
	}
	if refused, ok := m.refused.lookup(in); ok {
		// The child stays as it was, and the owner's status tells of it.
		refused.Exists = true
		return refused
	}
	// A restore: either someone changed what the operator set, or the API
	// server changes it on every write (a registry mirror's admission
	// policy rewriting images). An apply would put back the first and could
	// not undo the second, which is no drift. A dry run tells which.
	if action == Restored && m.applyChangesNothing(ctx, in, live) {
		m.verify(ctx, live, in)
		log.FromContext(ctx).V(1).Info("Child differs from its desired state as the API server's admission makes it; left as it is",
			"kind", kind, "name", in.key.Name)
		return Result{Action: Unchanged, Exists: true}
	}

	if r, judged := m.judgeDesired(in, o); judged {
		r.Exists = true
		return r
	}
	// The conversion is guarded by the resourceVersion it read: a write
	// in between (the Deployment controller's) makes it read again.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error { return m.upgradeOwnership(ctx, in, live) }); err != nil {
		return writeFailed(fmt.Errorf("convert the field ownership of %s %s to server-side apply: %w", kind, in.key.Name, err))
	}
	err := m.apply(ctx, in, live)
	if apierrors.IsInvalid(err) {
		return m.repairInvalid(ctx, owner, in, live, err)
	}
	if err != nil {
		return writeFailed(fmt.Errorf("apply %s %s: %w", kind, in.key.Name, err))
	}
	m.verify(ctx, live, in)
	m.refused.forget(in)
	if action == Updated {
		countWrite(m.ownerKind, kind, "update")
		m.recorder.Eventf(owner, live, corev1.EventTypeNormal, kind+"Updated", "Update", "%s %s updated to the %s's spec", kind, in.key.Name, m.ownerKind)
	} else {
		countWrite(m.ownerKind, kind, "repair")
		m.recorder.Eventf(owner, live, corev1.EventTypeNormal, kind+"Restored", "Update", "%s %s was changed by someone else; restored to the %s's spec", kind, in.key.Name, m.ownerKind)
	}
	return Result{Action: action, Exists: true}
}

// adopt takes over an object that the caller allowed to adopt.
func (m *Manager) adopt(ctx context.Context, owner client.Object, in *intent, live client.Object, o ensureOptions) Result {
	kind := in.gvk.Kind
	if r, judged := m.judgeDesired(in, o); judged {
		r.Exists = true
		return r
	}
	if err := m.apply(ctx, in, live); err != nil {
		if apierrors.IsInvalid(err) {
			return m.refuse(in, err)
		}
		return writeFailed(fmt.Errorf("adopt %s %s: %w", kind, in.key.Name, err))
	}
	countWrite(m.ownerKind, kind, "adopt")
	// Fields the former writer set to the values the operator wants are
	// shared after the apply; they must be the operator's alone, or a value
	// the owner's spec later drops would stay in the child. Once adopted,
	// the child takes the update path, which does not come back here: so
	// any error but a lost leadership is retried a few times now.
	retriable := func(err error) bool { return !errors.Is(err, platform.ErrNotLeader) }
	if err := retry.OnError(retry.DefaultBackoff, retriable, func() error { return m.takeOverSharedFields(ctx, in, live) }); err != nil {
		return writeFailed(fmt.Errorf("take over the fields of adopted %s %s: %w", kind, in.key.Name, err))
	}
	m.recorder.Eventf(owner, live, corev1.EventTypeNormal, kind+"Adopted", "Adopt", "%s %s adopted", kind, in.key.Name)
	return Result{Action: Adopted, Exists: true}
}

// repairInvalid handles an apply the API server refused as invalid. A
// dry-run create of the desired state alone tells whether the spec is at
// fault; if it is not, what others put into the child is.
func (m *Manager) repairInvalid(ctx context.Context, owner client.Object, in *intent, live client.Object, applyErr error) Result {
	kind := in.gvk.Kind
	probe, err := in.newObject(m.scheme)
	if err != nil {
		return failed(err)
	}
	err = m.client.Create(ctx, probe, client.DryRunAll, client.FieldOwner(platform.Name))
	switch {
	case apierrors.IsInvalid(err):
		// The child stays as it was, and the owner's status tells of it.
		r := m.refuse(in, err)
		r.Exists = true
		return r
	case !apierrors.IsAlreadyExists(err) && err != nil:
		return writeFailed(fmt.Errorf("apply %s %s: %w; and a dry-run create failed: %w", kind, in.key.Name, applyErr, err))
	}
	managers, err := m.replaceForeignSpec(ctx, in, live)
	if err != nil {
		return writeFailed(fmt.Errorf("apply %s %s was refused (%w), and replacing its spec failed: %w", kind, in.key.Name, applyErr, err))
	}
	m.verified.forget(live)
	countWrite(m.ownerKind, kind, "replace")
	m.recorder.Eventf(owner, live, corev1.EventTypeWarning, kind+"Replaced", "Update",
		"%s %s could not be restored by an apply because of fields set by %v; their fields were removed from its spec", kind, in.key.Name, managers)
	return Result{Action: Replaced, Exists: true}
}

// apply server-side applies in with the operator's field manager, taking
// over fields that others changed, and decodes the answer into live.
func (m *Manager) apply(ctx context.Context, in *intent, live client.Object) error {
	intended, err := in.unstructured()
	if err != nil {
		return err
	}
	u := intended.DeepCopy()
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(platform.Name), client.ForceOwnership); err != nil {
		return err
	}
	resetObject(live)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, live); err != nil {
		return fmt.Errorf("decode the applied %s: %w", in.gvk.Kind, err)
	}
	return nil
}

// applyChangesNothing reports whether applying in would leave every field
// that in sets as live holds it, by a dry run of the apply. When the dry run
// fails, it reports false: the apply itself then meets the failure and
// reports it.
func (m *Manager) applyChangesNothing(ctx context.Context, in *intent, live client.Object) bool {
	intended, err := in.unstructured()
	if err != nil {
		return false
	}
	u := intended.DeepCopy()
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(platform.Name), client.ForceOwnership, client.DryRunAll); err != nil {
		return false
	}
	same, err := m.differ.agree(in, live, u)
	return err == nil && same
}

// judge asks the Judge option, if any, about desired, the child as in
// describes it; judged is true when it refused, with the Result to return.
func (m *Manager) judge(in *intent, desired client.Object, o ensureOptions) (r Result, judged bool) {
	if o.judge == nil {
		return Result{}, false
	}
	err := o.judge(desired)
	if err == nil {
		return Result{}, false
	}
	kind := in.gvk.Kind
	return Result{
		Action:  Invalid,
		Err:     fmt.Errorf("the operator refused %s %s as built from the spec: %w", kind, in.key.Name, err),
		Message: fmt.Sprintf("The operator refused the %s built from the spec: %v", kind, err),
	}, true
}

// judgeDesired is judge on a new typed object of the desired state.
func (m *Manager) judgeDesired(in *intent, o ensureOptions) (Result, bool) {
	if o.judge == nil {
		return Result{}, false
	}
	desired, err := in.newObject(m.scheme)
	if err != nil {
		return failed(err), true
	}
	return m.judge(in, desired, o)
}

// refuse reports a desired state the API server refused as invalid and
// remembers it, so that it is not sent again before it changes.
func (m *Manager) refuse(in *intent, err error) Result {
	r := invalid(in.gvk.Kind, in.key.Name, err)
	m.refused.remember(in, r)
	return r
}

func failed(err error) Result {
	return Result{Action: Failed, Err: err, Message: err.Error()}
}

// writeFailed is failed, except for a write refused for want of
// leadership, which is nobody's failure and is reported by nobody.
func writeFailed(err error) Result {
	if errors.Is(err, platform.ErrNotLeader) {
		return Result{Action: Failed, Err: err, Exists: true}
	}
	r := failed(err)
	r.Exists = true
	return r
}

func invalid(kind, name string, err error) Result {
	return Result{
		Action:  Invalid,
		Err:     fmt.Errorf("the API server refused %s %s as built from the spec: %w", kind, name, err),
		Message: fmt.Sprintf("The API server refused the %s built from the spec: %v", kind, err),
	}
}

func conflict(kind, name string, live client.Object, ownerKind string) Result {
	holder := "is not owned by this " + ownerKind
	if ref := metav1.GetControllerOf(live); ref != nil {
		holder = fmt.Sprintf("is controlled by %s %s", ref.Kind, ref.Name)
	}
	return Result{Action: Conflict, Message: fmt.Sprintf(
		"%s %s already exists and %s; the operator leaves it untouched. Delete or rename it, or give the %s another name",
		kind, name, holder, ownerKind)}
}

// readWhole reads the child of in, of live's type, from the API server as
// it is there: with the field sets of its managed fields, which the cache
// does not keep, and the fields a partial copy leaves out (PartialCopy).
func (m *Manager) readWhole(ctx context.Context, in *intent, live client.Object) (client.Object, error) {
	whole, ok := reflect.New(reflect.TypeOf(live).Elem()).Interface().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", live)
	}
	countRead(m.ownerKind, in.gvk.Kind, "compare")
	if err := m.apiReader.Get(ctx, in.key, whole); err != nil {
		return nil, err
	}
	return whole, nil
}

// resetObject empties obj, so that decoding into it leaves nothing of what
// it held before (a field the answer omits must not keep an old value).
func resetObject(obj client.Object) {
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}
