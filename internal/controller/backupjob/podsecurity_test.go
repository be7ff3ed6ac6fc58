package backupjob_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/gomega"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/podsecurity"
)

// reconcileRefused reconciles at the BackupJob's creation plus d and
// expects the error of a refused template. (Without a manager the
// reconciler plans no retry: with one, the refusal is tried again only at
// the next scheduled time or when the spec changes.)
func (f *fixture) reconcileRefused(d time.Duration) {
	f.t.Helper()
	f.clock.SetTime(f.created.Add(d))
	_, err := f.r.Reconcile(f.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: f.ns, Name: f.bj.Name}})
	f.g.Expect(err).To(MatchError(ContainSubstring("The operator runs no pod from this template")))
}

// A template that the CRD's rules let through but whose pod breaks the
// restricted Pod Security Standard (here a capability that lets a root
// process mount the node's file systems) runs nothing: the namespace of
// the test enforces no Pod Security level, so without the operator's own
// check the API server would create the Job. The refusal names the field
// and gives the library's reason; fixing the spec starts the run.
func TestARunWhosePodBreaksTheRestrictedStandardIsRefused(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}},
		}
	})
	f.r.PodSecurityVersion = podsecurity.VersionOf("v1.37.2")
	f.reconcileRefused(10 * time.Second)
	f.g.Expect(f.jobs()).To(BeEmpty())
	f.g.Expect(f.claims()).To(BeEmpty(), "no backup claim is made for a run that cannot start")
	c := f.condition(v1alpha1.BackupJobDegradedCondition)
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobInvalidSpecReason))
	f.g.Expect(c.Message).To(ContainSubstring(`spec.jobTemplate.spec.template.spec: Forbidden: violates PodSecurity "restricted:v1.37": `))
	f.g.Expect(c.Message).To(ContainSubstring(`must not include "SYS_ADMIN" in securityContext.capabilities.add`))
	f.g.Expect(f.condition(v1alpha1.BackupJobReadyCondition).Status).To(Equal(metav1.ConditionFalse))

	bj := f.get()
	bj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].SecurityContext = nil
	f.g.Expect(k8sClient.Update(t.Context(), bj)).To(Succeed())
	f.at(11 * time.Second)
	jobs := f.jobs()
	f.g.Expect(jobs).To(HaveLen(1))
	f.g.Expect(jobs[0].Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	f.g.Expect(f.condition(v1alpha1.BackupJobDegradedCondition).Status).To(Equal(metav1.ConditionFalse))
}

// The verify template is judged as the copy's: a drill whose pod binds a
// port of its node starts no claim and no Job.
func TestADrillWhosePodBreaksTheRestrictedStandardIsRefused(t *testing.T) {
	f := newFixture(t, false, func(bj *v1alpha1.BackupJob) {
		bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 1, JobTemplate: &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "verify", Image: "busybox:1.36",
				Ports: []corev1.ContainerPort{{ContainerPort: 22, HostPort: 22}},
			}}}},
		}}}
	})
	f.at(10 * time.Second)
	f.finishJob(f.runName(10*time.Second), true)
	f.reconcileRefused(11 * time.Second)
	f.g.Expect(f.jobs()).To(HaveLen(1), "the run's Job only")
	drills := &corev1.PersistentVolumeClaimList{}
	f.g.Expect(k8sClient.List(t.Context(), drills, client.InNamespace(f.ns), client.HasLabels{"example.com/drill"})).To(Succeed())
	f.g.Expect(drills.Items).To(BeEmpty())
	c := f.condition(v1alpha1.BackupJobDegradedCondition)
	f.g.Expect(c.Reason).To(Equal(v1alpha1.BackupJobInvalidSpecReason))
	f.g.Expect(c.Message).To(ContainSubstring(`spec.verify.jobTemplate.spec.template.spec: Forbidden: violates PodSecurity "restricted:latest": hostPort`))
}
