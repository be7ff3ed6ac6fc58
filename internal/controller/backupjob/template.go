package backupjob

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/platform"
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

// templateProblems are the reasons not to run job, built from template,
// which is at path in the BackupJob: labels or annotations the operator
// reads as its own, Job settings by which the Job is not one pod's copy run
// to its end, the restricted standard at version v, where the pod may run,
// and settings the operator's pods do without.
func templateProblems(path *field.Path, template *v1alpha1.BackupJobTemplate, job *batchv1.Job, v podsecurity.Version) field.ErrorList {
	pod := path.Child("spec", "template")
	var errs field.ErrorList
	errs = append(errs, reservedMetadata(path.Child("metadata"), template.Labels, template.Annotations)...)
	errs = append(errs, jobShapeProblems(path.Child("spec"), &template.Spec)...)
	errs = append(errs, reservedMetadata(pod.Child("metadata"), template.Spec.Template.Labels, template.Spec.Template.Annotations)...)
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

// jobShapeProblems refuses, in a template's Job spec at path, the settings
// by which a Job is not one pod's copy run to its end: the operator reads a
// Complete Job as a backup made, or a drill passed, and a running one as a
// run in progress. completions 0 completes the Job without running a pod
// (an empty claim would count as the newest successful backup, a drill
// that checked nothing as passed); parallelism 0 runs none until the
// deadline; more than one completion or pod runs several copies into the
// same volume; a suspended Job never ends (activeDeadlineSeconds does not
// count while it is suspended), and holds the schedule under Forbid; an
// Indexed Job completes on its own success policy.
func jobShapeProblems(path *field.Path, spec *batchv1.JobSpec) field.ErrorList {
	var errs field.ErrorList
	if c := spec.Completions; c != nil && *c != 1 {
		errs = append(errs, field.Forbidden(path.Child("completions"),
			fmt.Sprintf("may only be 1 or unset, not %d: a run or drill is one pod's copy, and a Job that completes without it would count as a backup made or a drill passed", *c)))
	}
	if p := spec.Parallelism; p != nil && *p != 1 {
		errs = append(errs, field.Forbidden(path.Child("parallelism"),
			fmt.Sprintf("may only be 1 or unset, not %d: a run or drill is one pod's copy", *p)))
	}
	if spec.Suspend != nil && *spec.Suspend {
		errs = append(errs, field.Forbidden(path.Child("suspend"),
			"may only be false or unset: a suspended Job runs no pod and never ends, as its activeDeadlineSeconds does not count while it is suspended"))
	}
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion {
		errs = append(errs, field.Forbidden(path.Child("completionMode"),
			fmt.Sprintf("may only be %s or unset, not %s: a run or drill is one pod's copy", batchv1.NonIndexedCompletion, *m)))
	}
	return errs
}

// reservedMetadata refuses, in a template's labels and annotations, the
// keys the operator reads as its own: those under example.com/ (a Job
// labelled example.com/drill would pass for a restore drill), the
// managed-by label (its caches hold only what carries it), and
// app.kubernetes.io/name=website, which every Website's Service selects (a
// pod so labelled, with the instance label of a Website, would serve its
// traffic).
func reservedMetadata(path *field.Path, labels, annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range []struct {
		name   string
		values map[string]string
	}{{"labels", labels}, {"annotations", annotations}} {
		// Sorted, so that the condition's message does not change from
		// one reconcile to the next.
		for _, key := range slices.Sorted(maps.Keys(m.values)) {
			if reason := reservedKey(m.name, key, m.values[key]); reason != "" {
				errs = append(errs, field.Forbidden(path.Child(m.name).Key(key), reason))
			}
		}
	}
	return errs
}

// reservedPrefix starts the labels and annotations the operator reads as
// its own.
const reservedPrefix = "example.com/"

// websiteNameLabel and websiteName are the label every Website's Service
// selects, with its value (internal/controller/website, NameLabel and
// AppName).
const (
	websiteNameLabel = "app.kubernetes.io/name"
	websiteName      = "website"
)

func reservedKey(kind, key, value string) string {
	switch {
	case strings.HasPrefix(key, reservedPrefix):
		return "may not be set: keys under " + reservedPrefix + " are the operator's"
	case kind == "labels" && key == platform.ManagedByLabel:
		return "may not be set: the label marks what the operator manages"
	case kind == "labels" && key == websiteNameLabel && value == websiteName:
		return "may not be " + websiteName + ": every Website's Service selects pods so labelled"
	}
	return ""
}

// refuseTemplate reports, as InvalidSpec, a template whose Job the operator
// will not run, and tells whether it did. Nothing of the run or drill is
// made then; a changed spec is judged again.
func (r *Reconciler) refuseTemplate(bj *v1alpha1.BackupJob, path *field.Path, template *v1alpha1.BackupJobTemplate, job *batchv1.Job, out *outcome) bool {
	errs := templateProblems(path, template, job, r.PodSecurityVersion)
	if len(errs) == 0 {
		return false
	}
	reasons := make([]string, len(errs))
	for i, err := range errs {
		reasons[i] = err.Error()
	}
	message := fmt.Sprintf("The operator runs no pod from this template: %s", strings.Join(reasons, "; "))
	out.Add(fmt.Errorf("BackupJob %s/%s: %s", bj.Namespace, bj.Name, message), true)
	out.Report(v1alpha1.BackupJobInvalidSpecReason, kit.TruncateMessage(message))
	return true
}
