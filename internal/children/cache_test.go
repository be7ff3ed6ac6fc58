package children

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A partial copy leaves out what it was told to, says what in its mark, and
// keeps the rest; the Manager knows it by the mark. A tombstone of a deleted
// object passes through untouched.
func TestPartialCopyMarksWhatItLeavesOut(t *testing.T) {
	g := NewWithT(t)
	trim := PartialCopy("spec.template", func(d *appsv1.Deployment) { d.Spec.Template = corev1.PodTemplateSpec{} })
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Labels: map[string]string{"app": "site"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
		}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1},
	}
	g.Expect(isPartial(d)).To(BeFalse())

	out, err := trim(d.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := out.(*appsv1.Deployment)
	g.Expect(trimmed.Spec.Template).To(Equal(corev1.PodTemplateSpec{}))
	g.Expect(trimmed.Annotations).To(Equal(map[string]string{PartialAnnotation: "spec.template"}))
	g.Expect(isPartial(trimmed)).To(BeTrue())
	g.Expect(trimmed.Labels).To(Equal(d.Labels))
	g.Expect(trimmed.Status).To(Equal(d.Status))

	again, err := trim(trimmed.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(trimmed), "a transform may run twice on the same object")

	tombstone := "not a Deployment"
	out, err = trim(tombstone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tombstone))
}
