package children

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func verifiedDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "site", Namespace: "default", UID: "uid-1", ResourceVersion: "10", Generation: 2,
		Labels:          map[string]string{"app": "site"},
		Annotations:     map[string]string{ConfigHashAnnotation: "abc"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Website", Name: "site", UID: "owner-1"}},
	}}
}

// desiredMetadata is an intent that sets the labels and annotations of
// verifiedDeployment, with the digest hash.
func desiredMetadata(hash string) *intent {
	u := &unstructured.Unstructured{}
	u.SetLabels(map[string]string{"app": "site"})
	u.SetAnnotations(map[string]string{ConfigHashAnnotation: "abc"})
	return &intent{object: u, hash: hash}
}

// A child found equal to its desired state is not compared again until
// what the operator sets in it may have changed: its spec (the generation),
// the metadata it sets, or the desired state. The status changes that a
// Deployment goes through in a rollout, and metadata that others add, do
// not count.
func TestVerifiedChildrenAreComparedAgainOnlyWhenWhatTheOperatorSetsMayHaveChanged(t *testing.T) {
	const desired = "hash-1"
	for _, tc := range []struct {
		name     string
		change   func(client.Object)
		desired  string
		verified bool
	}{
		{name: "an annotation of someone else's added (the Deployment controller's revision)", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{ConfigHashAnnotation: "abc", "deployment.kubernetes.io/revision": "1"})
		}},
		{name: "a label of someone else's added", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(map[string]string{"app": "site", "team": "web"})
		}},
		{name: "a label the operator sets changed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(map[string]string{"app": "other"})
		}},
		{name: "an annotation the operator sets removed, another added", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "1"})
		}},
		{name: "an owner added", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "owner-2"}))
		}},
		{name: "nothing", change: func(client.Object) {}, desired: desired, verified: true},
		{name: "a status update", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.(*appsv1.Deployment).Status.AvailableReplicas = 1
		}},
		{name: "the desired state", change: func(client.Object) {}, desired: "hash-2"},
		{name: "the spec, by someone else", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetGeneration(3)
		}},
		{name: "a label removed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(nil)
		}},
		{name: "an annotation changed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{ConfigHashAnnotation: "other"})
		}},
		{name: "the owner reference removed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetOwnerReferences(nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := newVerifiedCache()
			live := verifiedDeployment()
			cache.remember(live, desiredMetadata(desired))
			tc.change(live)
			if got := cache.matches(live, desiredMetadata(tc.desired)); got != tc.verified {
				t.Errorf("after a change of %s: verified %v, want %v", tc.name, got, tc.verified)
			}
		})
	}
}

// Objects without a generation (a Service) are compared again after any
// write.
func TestChildrenWithoutAGenerationAreComparedAgainAfterAnyWrite(t *testing.T) {
	cache := newVerifiedCache()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "site", UID: "uid-2", ResourceVersion: "5"}}
	cache.remember(svc, desiredMetadata("hash"))
	if !cache.matches(svc, desiredMetadata("hash")) {
		t.Fatal("the Service as remembered is not verified")
	}
	svc.Spec.Ports = []corev1.ServicePort{{Port: 8080}}
	svc.ResourceVersion = "6"
	if cache.matches(svc, desiredMetadata("hash")) {
		t.Error("a Service written since it was verified still is")
	}
}

// Two states of a child agree when every field the operator sets holds the
// same value in both, whatever else differs: what tells an apply that would
// change nothing (the API server rewrites the field on every write) from one
// that restores a hand edit.
func TestStatesAgreeOnlyWhenTheFieldsTheOperatorSetsAreEqual(t *testing.T) {
	desired := appsv1ac.Deployment("site", "default").WithLabels(map[string]string{"app": "site"}).
		WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("web").WithImage("nginx")))))
	in, err := newIntent(desired)
	if err != nil {
		t.Fatal(err)
	}
	live := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default", ResourceVersion: "10",
				Labels: map[string]string{"app": "site"}, Annotations: in.object.GetAnnotations()},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "mirror.example.com/nginx"}},
			}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		agree  bool
	}{
		{name: "the same object", change: func(*appsv1.Deployment) {}, agree: true},
		{name: "others' fields differ", agree: true, change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Labels["team"] = "web"
			d.Spec.Replicas = ptr.To[int32](3)
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy"})
			d.Status.ReadyReplicas = 3
		}},
		{name: "an image the operator sets differs", change: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "mirror.example.com/evil"
		}},
		{name: "a label the operator sets differs", change: func(d *appsv1.Deployment) { d.Labels["app"] = "other" }},
		{name: "a label the operator sets is gone", change: func(d *appsv1.Deployment) { delete(d.Labels, "app") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := live()
			tc.change(other)
			agree, err := newDiffer(clientgoscheme.Scheme).agree(in, live(), other)
			if err != nil {
				t.Fatal(err)
			}
			if agree != tc.agree {
				t.Errorf("agree = %t, want %t", agree, tc.agree)
			}
		})
	}
}
