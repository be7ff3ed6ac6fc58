package website_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/testgen"
)

// observed returns the Deployment as the API server would store it after
// applying desired: with defaults and fields of other managers added.
func observed(t *testing.T, desired any) *appsv1.Deployment {
	d := decode[appsv1.Deployment](t, desired)
	d.ResourceVersion = "17"
	d.UID = "deployment-uid"
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	c := &d.Spec.Template.Spec.Containers[0]
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.TerminationMessagePath = "/dev/termination-log"
	c.ReadinessProbe.PeriodSeconds = 10
	c.ReadinessProbe.TimeoutSeconds = 1
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	d.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1}
	return d
}

func TestCompare(t *testing.T) {
	site := testgen.Website("site", "default", testgen.WithEnv("MODE", "prod"))
	desired := website.DesiredDeployment(site)

	tests := []struct {
		name   string
		change func(d *appsv1.Deployment)
		want   website.Difference
	}{
		{name: "as applied, with server defaults", change: func(*appsv1.Deployment) {}, want: website.NoDifference},
		{
			name: "fields of other managers",
			change: func(d *appsv1.Deployment) {
				d.Labels["team"] = "web"
				d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
			},
			want: website.NoDifference,
		},
		{
			name:   "image edited by hand",
			change: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:latest" },
			want:   website.Drifted,
		},
		{
			name:   "scaled by hand",
			change: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) },
			want:   website.Drifted,
		},
		{
			name:   "environment variable removed by hand",
			change: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil },
			want:   website.Drifted,
		},
		{
			name: "owner reference removed",
			change: func(d *appsv1.Deployment) {
				d.OwnerReferences = nil
			},
			want: website.Drifted,
		},
		{
			name: "probe port changed",
			change: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = intstr.FromInt32(81)
			},
			want: website.Drifted,
		},
		{
			name:   "applied from another spec",
			change: func(d *appsv1.Deployment) { d.Annotations[website.ConfigHashAnnotation] = "older" },
			want:   website.ConfigChanged,
		},
		{
			name:   "never applied by the operator",
			change: func(d *appsv1.Deployment) { delete(d.Annotations, website.ConfigHashAnnotation) },
			want:   website.ConfigChanged,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := observed(t, desired)
			tt.change(d)
			got, err := website.Compare(desired, d)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// A field the operator no longer sets, such as a readiness path removed from
// the spec, leaves no trace in the desired configuration; the hash sees it.
func TestCompareSeesAFieldNoLongerSet(t *testing.T) {
	g := NewWithT(t)
	before := observed(t, website.DesiredDeployment(testgen.Website("site", "default", testgen.WithReadinessPath("/healthz"))))
	after := website.DesiredDeployment(testgen.Website("site", "default"))

	got, err := website.Compare(after, before)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(website.ConfigChanged))
}
