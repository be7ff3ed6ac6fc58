package children

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"example.com/platform-operator/internal/platform"
)

// ConfigHashAnnotation holds the hash of the apply configuration a child was
// last applied with. A field the operator stops setting leaves no trace in
// the new desired state, but it changes the hash, so the child is applied
// again and server-side apply removes the field.
const ConfigHashAnnotation = "example.com/config-hash"

// differ compares children with their desired state by the merge schema of
// their types: the structured-merge-diff schema that client-go ships for
// the built-in types (the API server's own), and a deduced one, where every
// map is granular and every list atomic, for types it does not know.
type differ struct {
	scheme  *runtime.Scheme
	builtin managedfields.TypeConverter
	deduced managedfields.TypeConverter
	// slots bounds the comparisons under way to one per CPU. A comparison
	// needs only CPU, and allocates intermediate values many times the size
	// of the child that it holds until it ends: after a restart, when every
	// worker compares a child, more of them at once would finish no sooner
	// but hold more memory.
	slots chan struct{}
}

func newDiffer(scheme *runtime.Scheme) *differ {
	return &differ{
		scheme:  scheme,
		builtin: applyconfigurations.NewTypeConverter(scheme),
		deduced: managedfields.NewDeducedTypeConverter(),
		slots:   make(chan struct{}, goruntime.GOMAXPROCS(0)),
	}
}

// hold waits for a comparison slot; the returned func gives it back.
func (d *differ) hold() func() {
	d.slots <- struct{}{}
	return func() { <-d.slots }
}

// differs reports whether applying in to live would change live: whether
// any field that in sets has another value in live, compared as the API
// server merges it.
//
// The desired values are normalized first by decoding them into the typed
// object, as the API server stores them: a field set to its zero value that
// the type omits when empty (an env var's empty value) is absent from the
// stored object, so it is compared as absent. Such a field still differs
// when live has a value there.
func (d *differ) differs(in *intent, live client.Object) (bool, error) {
	drift, err := d.drift(in, live)
	return len(drift) > 0, err
}

// drift lists the paths of the fields that in sets and live holds
// differently, sorted.
func (d *differ) drift(in *intent, live client.Object) ([]string, error) {
	defer d.hold()()
	want, err := d.desired(in)
	if err != nil {
		return nil, err
	}
	liveTyped, err := toTyped(want.converter, live, in.gvk)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	merged, err := liveTyped.Merge(want.value)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	changed := &fieldpath.Set{}
	if !value.Equals(merged.AsValue(), liveTyped.AsValue()) {
		comparison, err := liveTyped.Compare(merged)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		changed = comparison.Modified.Union(comparison.Added).Union(comparison.Removed)
	}
	// Fields set to a value that storage drops must be absent in live too.
	if !want.dropped.Empty() {
		// With their key fields, list items extract whole; what counts is
		// whether a dropped leaf itself is present.
		present, err := liveTyped.ExtractItems(want.dropped, typed.WithAppendKeyFields()).ToFieldSet()
		if err != nil {
			return nil, fmt.Errorf("live fields: %w", err)
		}
		changed = changed.Union(present.Leaves().Intersection(want.dropped))
	}
	var paths []string
	changed.Leaves().Iterate(func(p fieldpath.Path) { paths = append(paths, p.String()) })
	slices.Sort(paths)
	return paths, nil
}

// Drift lists the fields that desired, an apply configuration, sets and
// live holds differently, as the API server would merge desired into live:
// what an apply of desired would change. It is empty when there is none.
func Drift(scheme *runtime.Scheme, desired runtime.ApplyConfiguration, live client.Object) ([]string, error) {
	in, err := newIntent(desired)
	if err != nil {
		return nil, err
	}
	// Compare desired as given.
	in.withoutHashAnnotation()
	return newDiffer(scheme).drift(in, live)
}

// desiredValue is a desired child as structured-merge-diff sees it.
type desiredValue struct {
	converter managedfields.TypeConverter
	// value holds the fields the operator sets, with their values
	// normalized as the API server stores them.
	value *typed.TypedValue
	// dropped are the fields the operator sets to a value that storage
	// omits (an empty string, a zero number).
	dropped *fieldpath.Set
	// fields are all the fields the operator sets, dropped or kept.
	fields *fieldpath.Set
}

func (d *differ) desired(in *intent) (*desiredValue, error) {
	converter, intended, err := d.typedIntent(in)
	if err != nil {
		return nil, fmt.Errorf("desired fields: %w", err)
	}
	// The fields the operator sets, as the apply configuration names them.
	set, err := intended.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("desired fields: %w", err)
	}
	desiredObj, err := in.newObject(d.scheme)
	if err != nil {
		return nil, err
	}
	// The typed object holds the desired state as the API server stores it,
	// plus the zero values of fields the type always encodes (a creation
	// timestamp, an empty status); only what the apply configuration sets
	// is kept. Walking the two maps costs a fraction of extracting the set
	// from the typed value by its schema.
	stored, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desiredObj)
	if err != nil {
		return nil, fmt.Errorf("desired: %w", err)
	}
	given, err := in.unstructured()
	if err != nil {
		return nil, err
	}
	normalized, _ := onlyIntended(stored, given.Object).(map[string]any)
	value, err := converter.ObjectToTyped(&unstructured.Unstructured{Object: normalized}, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("desired: %w", err)
	}
	kept, err := value.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("desired fields: %w", err)
	}
	return &desiredValue{converter: converter, value: value, dropped: set.Leaves().Difference(kept), fields: set}, nil
}

// onlyIntended is stored, a desired object as storage keeps it, without
// what intended, the apply configuration it was decoded from, does not
// set: the keys of a map that intended lacks, recursively. Lists keep their
// length and order when decoded, so their items pair by position. A value
// intended sets but storage dropped stays absent.
func onlyIntended(stored, intended any) any {
	switch intended := intended.(type) {
	case map[string]any:
		storedMap, ok := stored.(map[string]any)
		if !ok {
			return stored
		}
		out := make(map[string]any, len(intended))
		for key, value := range intended {
			if s, ok := storedMap[key]; ok {
				out[key] = onlyIntended(s, value)
			}
		}
		return out
	case []any:
		storedList, ok := stored.([]any)
		if !ok || len(storedList) != len(intended) {
			return stored
		}
		out := make([]any, len(storedList))
		for i := range storedList {
			out[i] = onlyIntended(storedList[i], intended[i])
		}
		return out
	}
	return stored
}

// agree reports whether a and b, two states of the child that in
// describes, hold the same values in every field that in sets.
func (d *differ) agree(in *intent, a, b runtime.Object) (bool, error) {
	defer d.hold()()
	want, err := d.desired(in)
	if err != nil {
		return false, err
	}
	var values [2]value.Value
	for i, obj := range []runtime.Object{a, b} {
		tv, err := toTyped(want.converter, obj, in.gvk)
		if err != nil {
			return false, err
		}
		values[i] = tv.ExtractItems(want.fields, typed.WithAppendKeyFields()).AsValue()
	}
	return value.Equals(values[0], values[1]), nil
}

// typedIntent is the apply configuration as a typed value of client-go's
// schema for the types it ships, else of the deduced one, with the schema's
// converter.
func (d *differ) typedIntent(in *intent) (managedfields.TypeConverter, *typed.TypedValue, error) {
	intended, err := in.unstructured()
	if err != nil {
		return nil, nil, err
	}
	if tv, err := d.builtin.ObjectToTyped(intended, typed.AllowDuplicates); err == nil {
		return d.builtin, tv, nil
	}
	tv, err := d.deduced.ObjectToTyped(intended, typed.AllowDuplicates)
	return d.deduced, tv, err
}

func toTyped(converter managedfields.TypeConverter, obj runtime.Object, gvk schema.GroupVersionKind) (*typed.TypedValue, error) {
	// A typed object read from the cache has no TypeMeta; the converter
	// finds the schema by it.
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return converter.ObjectToTyped(obj, typed.AllowDuplicates)
}

// hashOf digests an apply configuration's JSON. Apply configurations marshal
// deterministically: struct fields in declaration order, map keys sorted.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

func liveHash(live client.Object) string {
	return live.GetAnnotations()[ConfigHashAnnotation]
}

// maxVerified bounds the verifiedCache.
const maxVerified = 100_000

// verifiedCache remembers, per child, the state found equal to its desired
// state, so that the many reconciles that change nothing (a pod became
// ready, the Deployment controller updated the status) do not compare the
// same two objects again.
type verifiedCache struct {
	mu      sync.Mutex
	entries map[string]string
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{entries: map[string]string{}}
}

func (c *verifiedCache) key(live client.Object) string { return string(live.GetUID()) }

// comparedState names the state of live that a comparison with in looks
// at: what the operator sets, never the status. The resourceVersion changes
// with every write, status included, and a Deployment's status changes
// several times in a rollout. Of the children the operator manages,
// Deployments, Ingresses, NetworkPolicies, Jobs and custom resources
// (VolumeSnapshots) have a generation that the API server bumps with every
// change of their spec, which holds everything they have besides metadata
// and status; so the generation with the metadata the operator sets names
// the state across status updates: the labels and annotations whose keys in
// sets, and the owners. Metadata that others add (the Deployment
// controller's revision annotation, written once after each create) is not
// the operator's to compare. The others (Services, Namespaces,
// RoleBindings, claims) have no generation and fall back to the
// resourceVersion. A child type with a generation that does not cover a
// field the operator sets could not use this cache.
func comparedState(live client.Object, in *intent) string {
	if live.GetGeneration() == 0 {
		return "rv/" + live.GetResourceVersion()
	}
	metadata, err := json.Marshal(struct {
		Labels      map[string]string       `json:"l,omitempty"`
		Annotations map[string]string       `json:"a,omitempty"`
		Owners      []metav1.OwnerReference `json:"o,omitempty"`
	}{
		onlyKeysOf(live.GetLabels(), in.labels),
		onlyKeysOf(live.GetAnnotations(), in.annotations),
		live.GetOwnerReferences(),
	})
	if err != nil {
		// Maps of strings and owner references always marshal; were it
		// not so, comparing again is the safe side.
		return "rv/" + live.GetResourceVersion()
	}
	return fmt.Sprintf("generation/%d/%s", live.GetGeneration(), hashOf(metadata))
}

// untouchedSinceCreated reports whether live, a child that carries the hash
// of in, is known to hold what in sets without comparing it: its
// generation is still 1, so its spec is as it was created, from in (the
// hash says so), and the labels, annotations and owner references that in
// sets hold its values. After a restart, when the verifiedCache is empty,
// this spares a comparison, and for a partially cached child a read from
// the API server, for each child nobody has changed since the operator
// created it, most of them. It relies on what comparedState relies on: the
// generation covers every field outside the metadata. A child without a
// generation (a Service), or changed since its creation, is compared.
//
// The operator must have made it, too: a copy of the child, edited and
// created in its place by someone else (kubectl replace --force), is at
// generation 1 with the same labels, hash and owner. Its creator owns every
// field of it, so that the operator has no entry in its managed fields; a
// child the operator made has its create's entry, or its apply's once it
// put back metadata (which leaves the generation at 1).
func untouchedSinceCreated(live client.Object, in *intent) bool {
	if live.GetGeneration() != 1 || liveHash(live) != in.hash ||
		!holdsAll(live.GetLabels(), in.labels) || !holdsAll(live.GetAnnotations(), in.annotations) ||
		!slices.ContainsFunc(live.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return isOwnCreate(e) || isOwnApply(e) }) {
		return false
	}
	for _, owner := range in.owners {
		if !slices.ContainsFunc(live.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return reflect.DeepEqual(o, owner) }) {
			return false
		}
	}
	return true
}

// isOwnCreate and isOwnApply tell whether e is the entry of the operator's
// create or of its applies, which the cache keeps (TrimManagedFields).
func isOwnCreate(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == platform.Name && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == ""
}

func isOwnApply(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == platform.Name && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// holdsAll reports whether live has every key of desired, with its value.
func holdsAll(live, desired map[string]string) bool {
	for k, v := range desired {
		if got, ok := live[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// onlyKeysOf is the part of live whose keys desired has.
func onlyKeysOf(live, desired map[string]string) map[string]string {
	out := make(map[string]string, len(desired))
	for k := range desired {
		if v, ok := live[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (c *verifiedCache) matches(live client.Object, in *intent) bool {
	state := comparedState(live, in) + "/" + in.hash
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[c.key(live)] == state
}

func (c *verifiedCache) remember(live client.Object, in *intent) {
	state := comparedState(live, in) + "/" + in.hash
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxVerified {
		// A backstop: children are forgotten when their informer reports
		// them deleted (Manager.verify). Starting afresh costs one
		// comparison per child.
		clear(c.entries)
	}
	c.entries[c.key(live)] = state
}

func (c *verifiedCache) forget(live client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, c.key(live))
}
