package website

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/podsecurity"
)

// podPath is where the pod that a Website's spec shapes is, in its
// Deployment.
var podPath = field.NewPath("spec", "template", "spec")

// PodSecurityProblem judges a Website's pod as the operator's other pods are
// judged (internal/podsecurity): by the restricted Pod Security Standard at
// version v, with the upstream library, and by where it may run. A
// Website's spec shapes the pod (its user, the sysctl of a low port), so
// the check stands between the spec and the cluster whatever the
// namespace enforces. It returns "" when the pod passes.
func PodSecurityProblem(template *corev1.PodTemplateSpec, v podsecurity.Version) string {
	var problems []string
	if reason := podsecurity.Restricted(v, &template.ObjectMeta, &template.Spec); reason != "" {
		problems = append(problems, field.Forbidden(podPath, reason).Error())
	}
	for _, err := range podsecurity.Placement(podPath, &template.Spec) {
		problems = append(problems, err.Error())
	}
	return strings.Join(problems, "; ")
}

// judgePod is the children.Judge of a Website's Deployment: the Deployment
// is written only with a pod that PodSecurityProblem passes.
func judgePod(v podsecurity.Version) func(client.Object) error {
	return func(obj client.Object) error {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return fmt.Errorf("%T is not a Deployment", obj)
		}
		if problem := PodSecurityProblem(&d.Spec.Template, v); problem != "" {
			return errors.New(problem)
		}
		return nil
	}
}
