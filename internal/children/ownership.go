package children

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"example.com/platform-operator/internal/platform"
)

// needsOwnershipUpgrade tells, from the managed fields the cache keeps
// (without their field sets), whether the operator's field ownership of live
// is anything but one Apply entry: a create records an Update entry, and the
// operator's former name may own fields too. Either would keep a field
// alive after the operator stops setting it.
func needsOwnershipUpgrade(live client.Object) bool {
	return slices.ContainsFunc(live.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		_, ok := ownershipToUpgrade(e)
		return ok
	})
}

// ownershipToUpgrade tells whether e is an entry of the operator's that
// upgradeOwnership converts, and returns it as the cache keeps it: who and
// how, in constant strings, without what it owns.
func ownershipToUpgrade(e metav1.ManagedFieldsEntry) (metav1.ManagedFieldsEntry, bool) {
	switch {
	case e.Subresource != "":
	case e.Manager == platform.LegacyName:
		operation := metav1.ManagedFieldsOperationUpdate
		if e.Operation == metav1.ManagedFieldsOperationApply {
			operation = metav1.ManagedFieldsOperationApply
		}
		return metav1.ManagedFieldsEntry{Manager: platform.LegacyName, Operation: operation}, true
	case e.Manager == platform.Name && e.Operation == metav1.ManagedFieldsOperationUpdate:
		return metav1.ManagedFieldsEntry{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationUpdate}, true
	}
	return metav1.ManagedFieldsEntry{}, false
}

// upgradeOwnership merges every field the operator owns in live, under its
// former name or through its create, into the Apply entry of its field
// manager, as kubectl does when it moves from client-side to server-side
// apply. It reads live from the API server first: the cache keeps no field
// sets.
func (m *Manager) upgradeOwnership(ctx context.Context, in *intent, live client.Object) error {
	if !needsOwnershipUpgrade(live) {
		return nil
	}
	full, err := m.readWhole(ctx, in, live)
	if err != nil {
		return fmt.Errorf("read managed fields: %w", err)
	}
	if err := renameLegacyApplier(full); err != nil {
		return err
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(full, sets.New(platform.Name, platform.LegacyName), platform.Name)
	if err != nil {
		return err
	}
	if patch == nil {
		patch, err = replaceManagedFieldsPatch(full)
		if err != nil {
			return err
		}
	}
	return m.writeManagedFields(ctx, full, live, patch)
}

// writeManagedFields sends patch, a JSON patch of full's managed fields
// guarded by its resourceVersion, and gives live the new resourceVersion.
func (m *Manager) writeManagedFields(ctx context.Context, full, live client.Object, patch []byte) error {
	if err := m.client.Patch(ctx, full, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return err
	}
	live.SetResourceVersion(full.GetResourceVersion())
	return nil
}

// takeOverSharedFields removes the fields the operator applied to an adopted
// child from every other manager's entry, so that the operator owns them
// alone. Fields that only others set stay theirs. It reads the child's field
// sets from the API server, and writes them guarded by its resourceVersion.
func (m *Manager) takeOverSharedFields(ctx context.Context, in *intent, live client.Object) error {
	full, err := m.readWhole(ctx, in, live)
	if err != nil {
		return fmt.Errorf("read managed fields: %w", err)
	}
	entries := full.GetManagedFields()
	ours := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == platform.Name && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	})
	if ours < 0 {
		return fmt.Errorf("%s %s has no fields applied by %s", in.gvk.Kind, in.key.Name, platform.Name)
	}
	applied, err := decodeFields(entries[ours])
	if err != nil {
		return err
	}
	kept := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	changed := false
	for i, entry := range entries {
		if i == ours || entry.Subresource != "" {
			kept = append(kept, entry)
			continue
		}
		set, err := decodeFields(entry)
		if err != nil {
			return err
		}
		rest := set.Difference(applied)
		if rest.Equals(set) {
			kept = append(kept, entry)
			continue
		}
		changed = true
		if rest.Empty() {
			continue
		}
		data, err := rest.ToJSON()
		if err != nil {
			return fmt.Errorf("encode managed fields: %w", err)
		}
		entry.FieldsV1 = &metav1.FieldsV1{Raw: data}
		kept = append(kept, entry)
	}
	if !changed {
		return nil
	}
	full.SetManagedFields(kept)
	patch, err := replaceManagedFieldsPatch(full)
	if err != nil {
		return err
	}
	return m.writeManagedFields(ctx, full, live, patch)
}

// renameLegacyApplier gives the Apply entry of the operator's former name to
// its current one, uniting the two when both exist.
func renameLegacyApplier(obj client.Object) error {
	entries := obj.GetManagedFields()
	legacy := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == platform.LegacyName && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	})
	if legacy < 0 {
		return nil
	}
	current := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == platform.Name && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	})
	if current < 0 {
		entries[legacy].Manager = platform.Name
		obj.SetManagedFields(entries)
		return nil
	}
	union, err := unionFields(entries[current], entries[legacy])
	if err != nil {
		return err
	}
	entries[current].FieldsV1 = union
	obj.SetManagedFields(slices.Delete(entries, legacy, legacy+1))
	return nil
}

func unionFields(a, b metav1.ManagedFieldsEntry) (*metav1.FieldsV1, error) {
	setA, err := decodeFields(a)
	if err != nil {
		return nil, err
	}
	setB, err := decodeFields(b)
	if err != nil {
		return nil, err
	}
	data, err := setA.Union(setB).ToJSON()
	if err != nil {
		return nil, fmt.Errorf("encode managed fields: %w", err)
	}
	return &metav1.FieldsV1{Raw: data}, nil
}

func decodeFields(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return set, nil
	}
	if err := set.FromJSON(bytesReader(e.FieldsV1.Raw)); err != nil {
		return nil, fmt.Errorf("decode the managed fields of %s: %w", e.Manager, err)
	}
	return set, nil
}

// replaceManagedFieldsPatch writes obj's managed fields as they are, guarded
// by its resourceVersion like csaupgrade's patches.
func replaceManagedFieldsPatch(obj client.Object) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": obj.GetManagedFields()},
		{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
	})
}

// replaceForeignSpec drops from the child's spec every field that a manager
// other than the operator owns, merges the desired state into what remains
// and writes the result with an update guarded by the resourceVersion. It
// returns the managers whose fields it dropped.
func (m *Manager) replaceForeignSpec(ctx context.Context, in *intent, live client.Object) ([]string, error) {
	full, err := m.readWhole(ctx, in, live)
	if err != nil {
		return nil, fmt.Errorf("read managed fields: %w", err)
	}
	want, err := m.differ.desired(in)
	if err != nil {
		return nil, err
	}
	foreign := &fieldpath.Set{}
	var managers []string
	for _, entry := range full.GetManagedFields() {
		if entry.Subresource != "" || entry.Manager == platform.Name || entry.Manager == platform.LegacyName {
			continue
		}
		set, err := decodeFields(entry)
		if err != nil {
			return nil, err
		}
		spec := specFields(set)
		if !spec.Empty() {
			foreign = foreign.Union(spec)
			managers = append(managers, entry.Manager)
		}
	}
	current, err := toTyped(want.converter, full, in.gvk)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	merged, err := current.RemoveItems(foreign).Merge(want.value)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	obj, err := want.converter.TypedToObject(merged)
	if err != nil {
		return nil, err
	}
	replacement, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T from the type converter", obj)
	}
	replacement.SetGroupVersionKind(in.gvk)
	replacement.SetResourceVersion(full.GetResourceVersion())
	if err := m.client.Update(ctx, replacement, client.FieldOwner(platform.Name)); err != nil {
		return nil, err
	}
	resetObject(live)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(replacement.Object, live); err != nil {
		return nil, fmt.Errorf("decode the replaced %s: %w", in.gvk.Kind, err)
	}
	return managers, nil
}

// specFields are the members of set below .spec.
func specFields(set *fieldpath.Set) *fieldpath.Set {
	spec := &fieldpath.Set{}
	set.Iterate(func(p fieldpath.Path) {
		if len(p) > 0 && p[0].FieldName != nil && *p[0].FieldName == "spec" {
			spec.Insert(p)
		}
	})
	return spec
}
