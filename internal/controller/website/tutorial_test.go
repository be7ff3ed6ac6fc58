package website

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	websitev1 "example.com/platform-operator/api/v1"
)

// tutorialWebsite is a Website as the tutorial's kopf operator leaves it.
func tutorialWebsite() *websitev1.Website {
	return &websitev1.Website{
		ObjectMeta: metav1.ObjectMeta{
			Name: "my-site", Namespace: "default", UID: "website-uid",
			Finalizers: []string{KopfFinalizer},
			Annotations: map[string]string{
				KopfLastHandledAnnotation: `{"spec":{"image":"nginx:1.25","port":80}}`,
				websitev1.AdoptAnnotation: websitev1.AdoptFromTutorial,
			},
		},
		Spec: websitev1.WebsiteSpec{Image: "nginx:1.25", Port: 80},
	}
}

// tutorialDeployment is the Deployment the tutorial's create handler builds.
func tutorialDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "my-site", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "my-site"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "my-site"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "website", Image: "nginx:1.25",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				}}},
			},
		},
	}
}

func TestOnlyTheTutorialsDeploymentIsAdoptedAndOnlyWhenAsked(t *testing.T) {
	tests := []struct {
		name       string
		website    func(*websitev1.Website)
		deployment func(*appsv1.Deployment)
		adoptAll   bool
		want       bool
	}{
		{name: "the tutorial's state, adoption asked on the Website", want: true},
		{name: "adoption asked by the operator's flag",
			website:  func(w *websitev1.Website) { delete(w.Annotations, websitev1.AdoptAnnotation) },
			adoptAll: true, want: true},
		{name: "only the finalizer left by kopf",
			website: func(w *websitev1.Website) { delete(w.Annotations, KopfLastHandledAnnotation) }, want: true},
		{name: "only the annotation left by kopf",
			website: func(w *websitev1.Website) { w.Finalizers = nil }, want: true},
		{name: "adoption not asked",
			website: func(w *websitev1.Website) { delete(w.Annotations, websitev1.AdoptAnnotation) }},
		{name: "adoption asked with another value",
			website: func(w *websitev1.Website) { w.Annotations[websitev1.AdoptAnnotation] = "yes" }},
		{name: "a Website kopf never handled",
			website: func(w *websitev1.Website) { w.Finalizers = nil; delete(w.Annotations, KopfLastHandledAnnotation) }},
		{name: "a Deployment that only shares the name: another selector",
			deployment: func(d *appsv1.Deployment) {
				d.Spec.Selector.MatchLabels = map[string]string{"app": "my-site", "tier": "web"}
				d.Spec.Template.Labels["tier"] = "web"
			}},
		{name: "a Deployment that only shares the name: selector with expressions",
			deployment: func(d *appsv1.Deployment) {
				d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
			}},
		{name: "a Deployment that only shares the name: another container",
			deployment: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "app" }},
		{name: "a Deployment that only shares the name: a sidecar",
			deployment: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "proxy"})
			}},
		{name: "a Deployment that another controller owns",
			deployment: func(d *appsv1.Deployment) {
				d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.org/v1", Kind: "App", Name: "x", UID: "u", Controller: ptr.To(true)}}
			}},
		{name: "a Deployment of another name",
			deployment: func(d *appsv1.Deployment) { d.Name = "other" }},
		{name: "a Deployment in another namespace",
			deployment: func(d *appsv1.Deployment) { d.Namespace = "other" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, d := tutorialWebsite(), tutorialDeployment()
			if tt.website != nil {
				tt.website(w)
			}
			if tt.deployment != nil {
				tt.deployment(d)
			}
			if got := mayAdopt(w, d, tt.adoptAll); got != tt.want {
				t.Errorf("mayAdopt = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnAdoptedDeploymentKeepsTheTutorialsSelector(t *testing.T) {
	w := tutorialWebsite()
	d := DesiredAdoptedDeployment(w)
	if got := d.Spec.Selector.MatchLabels; len(got) != 1 || got["app"] != "my-site" {
		t.Errorf("selector = %v, want only app: my-site (a Deployment's selector cannot change)", got)
	}
	labels := d.Spec.Template.Labels
	for key, value := range Labels(w) {
		if labels[key] != value {
			t.Errorf("pod label %s = %q, want %q: the Website's Service selects it", key, labels[key], value)
		}
	}
	if labels["app"] != "my-site" {
		t.Errorf("pod label app = %q: the pods must still match the selector", labels["app"])
	}
}

func TestReleasingTheTutorialRemovesOnlyKopfsMarks(t *testing.T) {
	w := tutorialWebsite()
	w.Finalizers = []string{"example.org/keep", KopfFinalizer, "foregroundDeletion"}
	w.Annotations["kopf.zalando.org/create_website"] = `{"success":true}`
	w.Annotations["team"] = "web"

	finalizers, annotations, found := withoutTutorialMarks(w)
	if !found {
		t.Fatal("found = false, want true")
	}
	if want := []string{"example.org/keep", "foregroundDeletion"}; !slices.Equal(finalizers, want) {
		t.Errorf("finalizers = %v, want %v", finalizers, want)
	}
	for key := range annotations {
		if key == KopfLastHandledAnnotation || key == "kopf.zalando.org/create_website" {
			t.Errorf("annotation %s kept", key)
		}
	}
	if annotations["team"] != "web" || annotations[websitev1.AdoptAnnotation] != websitev1.AdoptFromTutorial {
		t.Errorf("annotations = %v: others must be kept", annotations)
	}
	if len(w.Finalizers) != 3 {
		t.Error("the Website itself must not be changed")
	}

	if _, _, found := withoutTutorialMarks(&websitev1.Website{}); found {
		t.Error("a Website without kopf's marks has nothing to release")
	}
}

func TestDeletionBlockerNamesForeignFinalizersOnly(t *testing.T) {
	deleting := func(finalizers ...string) *websitev1.Website {
		now := metav1.Now()
		return &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", DeletionTimestamp: &now, Finalizers: finalizers}}
	}
	if c := deletionBlocker(deleting("foregroundDeletion")); c != nil {
		t.Errorf("the garbage collector's finalizer is no blocker: %v", c.message)
	}
	c := deletionBlocker(deleting("example.org/x"))
	if c == nil || c.reason != websitev1.DeletionBlockedReason || !containsAll(c.message, "example.org/x") {
		t.Errorf("a foreign finalizer: got %+v", c)
	}
	c = deletionBlocker(deleting(KopfFinalizer))
	if c == nil || !containsAll(c.message, KopfFinalizer, "kubectl annotate website s -n n example.com/adopt=tutorial") {
		t.Errorf("the tutorial's finalizer: got %+v, want its name and how to release it", c)
	}
	notDeleting := tutorialWebsite()
	if c := deletionBlocker(notDeleting); c != nil {
		t.Errorf("a Website not being deleted: got %+v", c)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
