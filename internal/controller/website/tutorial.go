package website

import (
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// What the tutorial's kopf operator leaves behind, which the operator
// recognises when a user moves from it (see the README's migration guide).
const (
	// KopfFinalizer is the finalizer the kopf framework puts on every
	// object it handles a deletion of. Nobody removes it once the tutorial's
	// operator stops, so a Website that carries it cannot be deleted.
	KopfFinalizer = "kopf.zalando.org/KopfFinalizerMarker"
	// kopfAnnotationPrefix starts the annotations kopf keeps its state in,
	// such as kopf.zalando.org/last-handled-configuration.
	kopfAnnotationPrefix = "kopf.zalando.org/"
	// KopfLastHandledAnnotation is the spec kopf last handled.
	KopfLastHandledAnnotation = kopfAnnotationPrefix + "last-handled-configuration"
	// tutorialSelectorLabel is the only label of the tutorial's Deployment
	// selector and pod template: app: NAME.
	tutorialSelectorLabel = "app"
)

// handledByTutorial reports whether the tutorial's framework handled w: it
// left its finalizer or its last-handled annotation.
func handledByTutorial(w *websitev1.Website) bool {
	_, annotated := w.Annotations[KopfLastHandledAnnotation]
	return annotated || slices.Contains(w.Finalizers, KopfFinalizer)
}

// adoptionRequested reports whether w may take over what the tutorial's
// operator made: asked for on w itself, or for every Website by the
// operator's flag.
func adoptionRequested(w *websitev1.Website, adoptAll bool) bool {
	return adoptAll || w.Annotations[websitev1.AdoptAnnotation] == websitev1.AdoptFromTutorial
}

// tutorialSelector is the selector (and pod template labels) of the
// Deployment the tutorial's operator makes for w.
func tutorialSelector(w *websitev1.Website) map[string]string {
	return map[string]string{tutorialSelectorLabel: w.Name}
}

// hasTutorialSelector reports whether d selects pods as the tutorial's
// Deployment does, exactly: app: NAME and nothing else.
func hasTutorialSelector(w *websitev1.Website, d *appsv1.Deployment) bool {
	s := d.Spec.Selector
	return s != nil && len(s.MatchExpressions) == 0 && maps.Equal(s.MatchLabels, tutorialSelector(w))
}

// isTutorialDeployment reports whether d is the Deployment the tutorial's
// operator made for w: named like w in its namespace, controlled by nobody,
// selecting app: NAME and running one container named "website". A
// Deployment that only shares the name is not.
func isTutorialDeployment(w *websitev1.Website, d *appsv1.Deployment) bool {
	containers := d.Spec.Template.Spec.Containers
	return d.Name == w.Name && d.Namespace == w.Namespace &&
		metav1.GetControllerOf(d) == nil &&
		hasTutorialSelector(w, d) &&
		d.Spec.Template.Labels[tutorialSelectorLabel] == w.Name &&
		len(containers) == 1 && containers[0].Name == ContainerName
}

// mayAdopt reports whether the operator takes over d for w: the user asked
// for it, the tutorial's framework handled w, and d is the tutorial's.
func mayAdopt(w *websitev1.Website, d *appsv1.Deployment, adoptAll bool) bool {
	return adoptionRequested(w, adoptAll) && handledByTutorial(w) && isTutorialDeployment(w, d)
}

// withoutTutorialMarks returns w's finalizers and annotations without the
// kopf framework's ones, and whether there were any. Every other finalizer
// and annotation is kept.
func withoutTutorialMarks(w *websitev1.Website) (finalizers []string, annotations map[string]string, found bool) {
	finalizers = slices.DeleteFunc(slices.Clone(w.Finalizers), func(f string) bool { return f == KopfFinalizer })
	found = len(finalizers) != len(w.Finalizers)
	annotations = maps.Clone(w.Annotations)
	for key := range annotations {
		if strings.HasPrefix(key, kopfAnnotationPrefix) {
			delete(annotations, key)
			found = true
		}
	}
	return finalizers, annotations, found
}
