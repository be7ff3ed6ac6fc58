package children

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

func TestIntentCarriesTheApplyConfigurationWithItsHash(t *testing.T) {
	desired := appsv1ac.Deployment("site", "team-a").WithLabels(map[string]string{"app": "site"}).
		WithAnnotations(map[string]string{"note": "kept"}).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2))
	in, err := newIntent(desired)
	if err != nil {
		t.Fatal(err)
	}
	if in.gvk.Kind != "Deployment" || in.gvk.Group != "apps" || in.key.Namespace != "team-a" || in.key.Name != "site" {
		t.Errorf("identity: %v %v", in.gvk, in.key)
	}
	if in.labels["app"] != "site" || in.annotations["note"] != "kept" || in.annotations[ConfigHashAnnotation] != in.hash || in.hash == "" {
		t.Errorf("metadata: labels %v, annotations %v, hash %q", in.labels, in.annotations, in.hash)
	}
	u, err := in.unstructured()
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas"); replicas != float64(2) {
		t.Errorf("spec.replicas = %v, want 2", replicas)
	}
	if got := u.GetAnnotations(); got["note"] != "kept" || got[ConfigHashAnnotation] != in.hash {
		t.Errorf("the object's annotations: %v", got)
	}

	typed := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Paused: true}}
	if err := in.decodeInto(typed); err != nil {
		t.Fatal(err)
	}
	if typed.Name != "site" || typed.Kind != "Deployment" || *typed.Spec.Replicas != 2 || typed.Spec.Paused ||
		typed.Annotations["note"] != "kept" || typed.Annotations[ConfigHashAnnotation] != in.hash || typed.Labels["app"] != "site" {
		t.Errorf("decoded into a typed object (nothing of what it held before): %+v", typed)
	}

	// Another apply configuration, another hash.
	other, err := newIntent(desired.WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)))
	if err != nil {
		t.Fatal(err)
	}
	if other.hash == in.hash {
		t.Error("two apply configurations have the same hash")
	}
}

func TestIntentWithoutTheHashHasNoAnnotationsUnlessGiven(t *testing.T) {
	in, err := newIntent(corev1ac.Service("site", "team-a"))
	if err != nil {
		t.Fatal(err)
	}
	in.withoutHashAnnotation()
	u, err := in.unstructured()
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "annotations"); found {
		t.Errorf("an empty annotations map is a field of its own: %v", u.Object["metadata"])
	}
	typed := &corev1.Service{}
	if err := in.decodeInto(typed); err != nil {
		t.Fatal(err)
	}
	if typed.Annotations != nil {
		t.Errorf("typed: an empty annotations map: %v", typed.ObjectMeta)
	}
}

func TestIntentNeedsKindAndName(t *testing.T) {
	for name, desired := range map[string]*corev1ac.ServiceApplyConfiguration{
		"no name": corev1ac.Service("", "team-a"),
		"no kind": {ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName("site")},
	} {
		if _, err := newIntent(desired); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
