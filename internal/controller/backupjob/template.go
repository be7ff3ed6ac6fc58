package backupjob

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/podsecurity"
)

// Creating a BackupJob is creating pods: its runs' and drills' Jobs run the
// pods of its templates, with the operator's rights to create them. So the
// operator runs no pod that the user could not have created in a namespace
// that enforces the restricted Pod Security Standard, whatever the labels of
// the BackupJob's namespace say. The CRD refuses what its rules can see
// (api/v1alpha1, BackupJobTemplate); templateProblems judges the pods as they
// will run, after the operator's defaults, with the Pod Security library
// at the cluster's version, for a BackupJob stored before those rules or
// that they cannot judge.

var (
	jobTemplatePath    = field.NewPath("spec", "jobTemplate")
	verifyTemplatePath = field.NewPath("spec", "verify", "jobTemplate")
)

// templateProblems are the reasons not to run job, built from the template
// at path in the BackupJob: the restricted standard at version v, where
// the pod may run, and settings the operator's pods do without.
func templateProblems(path *field.Path, job *batchv1.Job, v podsecurity.Version) field.ErrorList {
	pod := path.Child("spec", "template")
	var errs field.ErrorList
	spec := &job.Spec.Template.Spec
	if reason := podsecurity.Restricted(v, &job.Spec.Template.ObjectMeta, spec); reason != "" {
		errs = append(errs, field.Forbidden(pod.Child("spec"), reason))
	}
	errs = append(errs, podsecurity.Placement(pod.Child("spec"), spec)...)
	if spec.RuntimeClassName != nil {
		errs = append(errs, field.Forbidden(pod.Child("spec", "runtimeClassName"),
			"may not be set: the runtime class chooses how containers are isolated from the node, and the nodes they run on"))
	}
	for i, vol := range spec.Volumes {
		if vol.CSI != nil {
			errs = append(errs, field.Forbidden(pod.Child("spec", "volumes").Index(i).Child("csi"),
				"may not be an inline CSI volume: its driver, not the cluster's storage classes, decides what it mounts; use a persistentVolumeClaim"))
		}
	}
	return errs
}

// refuseTemplate reports, as InvalidSpec, a template whose Job the operator
// will not run, and tells whether it did. Nothing of the run or drill is
// made then; a changed spec is judged again.
func (r *Reconciler) refuseTemplate(bj *v1alpha1.BackupJob, path *field.Path, job *batchv1.Job, out *outcome) bool {
	errs := templateProblems(path, job, r.PodSecurityVersion)
	if len(errs) == 0 {
		return false
	}
	reasons := make([]string, len(errs))
	for i, err := range errs {
		reasons[i] = err.Error()
	}
	message := fmt.Sprintf("The operator runs no pod from this template: %s", strings.Join(reasons, "; "))
	out.add(fmt.Errorf("BackupJob %s/%s: %s", bj.Namespace, bj.Name, message), true)
	out.report(v1alpha1.BackupJobInvalidSpecReason, controller.TruncateMessage(message))
	return true
}
