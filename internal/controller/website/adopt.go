package website

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
)

// deploymentIntent returns the desired Deployment of w and how to ensure it.
// A Deployment adopted from the tutorial's operator keeps its selector; one
// the tutorial's operator made is adopted when the user asked for it.
func (r *Reconciler) deploymentIntent(ctx context.Context, w *websitev1.Website) (*appsv1ac.DeploymentApplyConfiguration, []children.EnsureOption, error) {
	key := client.ObjectKeyFromObject(w)
	live := &appsv1.Deployment{}
	err := r.Client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) && adoptionRequested(w, r.AdoptTutorial) && handledByTutorial(w) {
		// The tutorial's Deployment lacks the operator's label, so the
		// cache does not hold it. Only Websites that ask for adoption,
		// and only until their Deployment is adopted, read past the cache.
		err = r.APIReader.Get(ctx, key, live)
	}
	switch {
	case apierrors.IsNotFound(err):
		return DesiredDeployment(w), nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("get Deployment %s: %w", w.Name, err)
	case metav1.IsControlledBy(live, w) && hasTutorialSelector(w, live):
		return DesiredAdoptedDeployment(w), nil, nil
	case mayAdopt(w, live, r.AdoptTutorial):
		adopt := children.AdoptIf(func(o client.Object) bool {
			d, ok := o.(*appsv1.Deployment)
			return ok && mayAdopt(w, d, r.AdoptTutorial)
		})
		return DesiredAdoptedDeployment(w), []children.EnsureOption{adopt}, nil
	}
	return DesiredDeployment(w), nil, nil
}

// tutorialConflictMessage explains a conflict with a Deployment that the
// tutorial's operator made, and how to resolve it without downtime.
func tutorialConflictMessage(w *websitev1.Website, d *appsv1.Deployment) string {
	return fmt.Sprintf("Deployment %s was made by the tutorial's kopf operator; the operator leaves it untouched. "+
		"To take it over without downtime, run: kubectl annotate website %s -n %s %s=%s (see the README's migration guide)",
		d.Name, w.Name, w.Namespace, websitev1.AdoptAnnotation, websitev1.AdoptFromTutorial)
}

// releaseTutorialMarks removes the kopf framework's finalizer and
// annotations from w once its children are the operator's, when the user
// asked for adoption. It patches with w's resourceVersion, so that a
// finalizer another controller adds in between is never dropped.
func (r *Reconciler) releaseTutorialMarks(ctx context.Context, w *websitev1.Website) error {
	finalizers, annotations, found := withoutTutorialMarks(w)
	if !found {
		return nil
	}
	released := w.DeepCopy()
	released.Finalizers = finalizers
	released.Annotations = annotations
	if err := r.Client.Patch(ctx, released, client.MergeFromWithOptions(w, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove the kopf framework's finalizer and annotations: %w", err)
	}
	r.Recorder.Eventf(w, nil, corev1.EventTypeNormal, "TutorialReleased", "Update",
		"Removed the finalizer %s and the kopf.zalando.org/ annotations of the tutorial's operator; the Website's children are the operator's", KopfFinalizer)
	return nil
}

// deletionBlocker is why w, being deleted, stays: finalizers of other
// controllers, which the operator never removes unless asked to for the
// tutorial's (see releaseTutorialMarks).
func deletionBlocker(w *websitev1.Website) *cause {
	// The garbage collector's own finalizers pass by themselves.
	foreign := slices.DeleteFunc(slices.Clone(w.Finalizers), func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	if w.DeletionTimestamp.IsZero() || len(foreign) == 0 {
		return nil
	}
	message := fmt.Sprintf("The Website is being deleted, but the finalizers %s keep it; the controllers that set them must remove them",
		strings.Join(foreign, ", "))
	if handledByTutorial(w) {
		message = fmt.Sprintf("The Website is being deleted, but the finalizer %s of the tutorial's kopf operator keeps it, and that operator no longer runs. "+
			"Release it with: kubectl annotate website %s -n %s %s=%s (the operator then removes only that finalizer, and the garbage collector the children)",
			KopfFinalizer, w.Name, w.Namespace, websitev1.AdoptAnnotation, websitev1.AdoptFromTutorial)
	}
	return &cause{reason: websitev1.DeletionBlockedReason, message: message}
}
