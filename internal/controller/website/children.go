package website

import (
	"context"
	"encoding/json"
	"errors"
	"example.com/platform-operator/internal/controller"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// childResult is what reconcileChild saw of one child.
type childResult struct {
	// present is true when the child exists and belongs to the Website; the
	// object passed to reconcileChild then holds it.
	present bool
	// current is true when the child carries the Website's current spec.
	current bool
	// blocker is set when the child could not be made to match.
	blocker *cause
}

// conflictReasons names, per kind, the reason given when an object of the
// Website's name is in the way.
var conflictReasons = map[string]string{
	"Deployment": websitev1.DeploymentConflictReason,
	"Service":    websitev1.ServiceConflictReason,
	"Ingress":    websitev1.IngressConflictReason,
}

func isConflict(reason string) bool {
	for _, r := range conflictReasons {
		if r == reason {
			return true
		}
	}
	return false
}

// reconcileChild makes the child of kind and w's name match desired, an apply
// configuration, or removes it when desired is nil. current is an empty
// object of the child's type; it receives the child as last seen.
//
// A child that exists but is not controlled by w is never written: w reports
// the conflict instead. A child that already carries every desired value is
// not written either, so that a reconcile with nothing to change makes no
// write call.
func (r *WebsiteReconciler) reconcileChild(ctx context.Context, w *websitev1.Website, kind string, desired runtime.ApplyConfiguration, current client.Object) (childResult, error) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	if desired == nil {
		return childResult{}, r.removeChild(ctx, w, kind, key, current)
	}
	found, err := r.observe(ctx, key, current)
	if err != nil {
		return childResult{}, fmt.Errorf("get %s %s: %w", kind, key.Name, err)
	}
	if found && !metav1.IsControlledBy(current, w) {
		return childResult{blocker: &cause{conflictReasons[kind], fmt.Sprintf(
			"%s %s already exists and is not owned by this Website; the operator leaves it untouched. "+
				"Delete or rename it, or give the Website another name", kind, key.Name)}}, nil
	}

	difference := ConfigChanged
	if found {
		difference, err = Compare(desired, current)
		if err != nil {
			return childResult{}, fmt.Errorf("compare %s %s with its desired state: %w", kind, key.Name, err)
		}
		if difference == NoDifference {
			return childResult{present: true, current: true}, nil
		}
	}

	if err := r.apply(ctx, desired, current); err != nil {
		if errors.Is(err, controller.ErrNotLeader) {
			return childResult{present: found}, err
		}
		if apierrors.IsInvalid(err) {
			// Retrying cannot help: the same spec builds the same child. The
			// next change of the Website triggers a new attempt.
			blocker := &cause{websitev1.InvalidSpecReason, truncate(fmt.Sprintf(
				"The API server refused the %s built from the spec: %v", kind, err))}
			return childResult{present: found, blocker: blocker}, fmt.Errorf("apply %s %s: %w", kind, key.Name, err)
		}
		blocker := &cause{websitev1.ApplyFailedReason, truncate(fmt.Sprintf("Could not apply %s %s: %v", kind, key.Name, err))}
		return childResult{present: found, blocker: blocker}, fmt.Errorf("apply %s %s: %w", kind, key.Name, err)
	}

	switch {
	case !found:
		r.Recorder.Eventf(w, current, corev1.EventTypeNormal, kind+"Created", "Create", "%s %s created", kind, key.Name)
	case difference == ConfigChanged:
		r.Recorder.Eventf(w, current, corev1.EventTypeNormal, kind+"Updated", "Update", "%s %s updated to the Website's spec", kind, key.Name)
	default:
		r.Recorder.Eventf(w, current, corev1.EventTypeNormal, kind+"Restored", "Update", "%s %s was changed by someone else; restored to the Website's spec", kind, key.Name)
	}
	ctrl.LoggerFrom(ctx).Info("Applied child", "kind", kind, "created", !found)
	return childResult{present: true, current: true}, nil
}

// observe reads the child named key into obj, first from the cache, then,
// when the cache does not have it, from the API server: objects without the
// operator's label are not cached, and one of them may be in the way.
func (r *WebsiteReconciler) observe(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// apply server-side applies config with the operator's field manager, taking
// over fields that someone else changed, and decodes the result into into.
func (r *WebsiteReconciler) apply(ctx context.Context, config runtime.ApplyConfiguration, into client.Object) error {
	if err := r.Client.Apply(ctx, config, client.FieldOwner(ManagerName), client.ForceOwnership); err != nil {
		return err
	}
	// Apply decodes the API server's answer into config itself.
	data, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("encode applied object: %w", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode applied object: %w", err)
	}
	return nil
}

// removeChild deletes the child named key that the Website no longer asks
// for. Only the cache is read: every child the operator made carries its
// label, so an object missing from the cache is not one to remove, and a
// Website without an Ingress costs no request to look for one.
func (r *WebsiteReconciler) removeChild(ctx context.Context, w *websitev1.Website, kind string, key types.NamespacedName, child client.Object) error {
	err := r.Client.Get(ctx, key, child)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get %s %s: %w", kind, key.Name, err)
	case !metav1.IsControlledBy(child, w):
		return nil // someone else's, and not in the way of anything
	}
	uid := child.GetUID()
	err = r.Client.Delete(ctx, child, client.Preconditions{UID: &uid})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, child.GetName(), err)
	}
	r.Recorder.Eventf(w, child, corev1.EventTypeNormal, kind+"Deleted", "Delete", "%s %s deleted: the Website no longer asks for it", kind, child.GetName())
	return nil
}
