package children

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/platform"
)

// Delete deletes the child named key, of obj's type, when it is the
// owner's: controlled by it and labelled as managed. Only the cache is read:
// every child carries the operator's label, so an object missing from the
// cache is not one to delete, and looking for a child that is usually absent
// (a Website's Ingress) costs no request. It reports whether it deleted.
func (m *Manager) Delete(ctx context.Context, owner client.Object, key types.NamespacedName, obj client.Object) (bool, error) {
	err := m.client.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %T %s: %w", obj, key.Name, err)
	case !metav1.IsControlledBy(obj, owner) || !isManaged(obj):
		return false, nil // someone else's, and not in the way of anything
	}
	return m.deleteObject(ctx, owner, obj)
}

// Prune deletes the owner's children of list's type in namespace that match
// selector and that keep does not want: children whose set varies, such as a
// BackupJob's runs. An object that is not controlled by owner or that lacks
// the operator's label is never deleted. It returns the names it deleted
// and the errors of those it could not delete.
func (m *Manager) Prune(ctx context.Context, owner client.Object, list client.ObjectList, namespace string, selector labels.Selector, keep func(client.Object) bool) ([]string, error) {
	if err := m.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list %T: %w", list, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("read %T: %w", list, err)
	}
	var deleted []string
	var errs []error
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || !metav1.IsControlledBy(obj, owner) || !isManaged(obj) || obj.GetDeletionTimestamp() != nil || keep(obj) {
			continue
		}
		gone, err := m.deleteObject(ctx, owner, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if gone {
			deleted = append(deleted, obj.GetName())
		}
	}
	return deleted, errors.Join(errs...)
}

// deleteObject deletes obj, guarded by its UID so that an object recreated
// under the same name in the meantime is not the one deleted.
func (m *Manager) deleteObject(ctx context.Context, owner, obj client.Object) (bool, error) {
	uid := obj.GetUID()
	err := m.client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	kind := kindOf(m, obj)
	if err != nil {
		return false, fmt.Errorf("delete %s %s: %w", kind, obj.GetName(), err)
	}
	m.verified.forget(obj)
	countWrite(m.ownerKind, kind, "delete")
	m.recorder.Eventf(owner, obj, corev1.EventTypeNormal, kind+"Deleted", "Delete", "%s %s deleted: the %s no longer asks for it", kind, obj.GetName(), m.ownerKind)
	return true, nil
}

func isManaged(obj client.Object) bool {
	v := obj.GetLabels()[platform.ManagedByLabel]
	return v == platform.Name || v == platform.LegacyName
}

func kindOf(m *Manager, obj client.Object) string {
	if gvks, _, err := m.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return fmt.Sprintf("%T", obj)
}
