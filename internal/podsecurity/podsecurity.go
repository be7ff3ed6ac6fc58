// Package podsecurity judges the pods the operator makes. The restricted Pod
// Security Standard is checked with the upstream library that the API
// server's own PodSecurity admission runs (k8s.io/pod-security-admission),
// at the version of the API server the operator talks to, whatever the
// labels of the pod's namespace say: a namespace without enforcement must
// not let a user get through the operator a pod that the user could not
// create there under the standard. Where a pod may run, which the standard
// leaves to the cluster, is checked here too: never on a node the pod names
// itself, never on a control-plane node.
package podsecurity

import (
	"fmt"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Version is a version of the Pod Security Standards. The zero Version is
// the latest one the library knows.
type Version struct {
	v   api.Version
	set bool
}

// Latest is the latest version of the standards the library knows.
func Latest() Version { return Version{} }

// VersionOf is the version of the standards that an API server of
// gitVersion (as /version tells it: v1.37.2, v1.36.4-gke.1200) enforces:
// its major and minor version. An API server newer than the library is
// judged by the latest standards the library knows, and so is one whose
// version cannot be read.
func VersionOf(gitVersion string) Version {
	m := gitVersionPattern.FindStringSubmatch(gitVersion)
	if m == nil {
		return Latest()
	}
	minor, err := strconv.Atoi(m[1])
	if err != nil {
		return Latest()
	}
	return Version{v: api.MajorMinorVersion(1, minor), set: true}
}

var gitVersionPattern = regexp.MustCompile(`^v1\.(0|[1-9][0-9]{0,3})(\.|$|[-+])`)

func (v Version) api() api.Version {
	if !v.set {
		return api.LatestVersion()
	}
	return v.v
}

// String is the version as the API server names it in its refusals:
// v1.37, or latest.
func (v Version) String() string { return v.api().String() }

// evaluator holds the library's checks, as the API server's admission
// plugin loads them.
var evaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		// The library's own checks are valid: its tests say so.
		panic(fmt.Sprintf("load the Pod Security checks: %v", err))
	}
	return e
}()

// Restricted judges a pod, by its metadata and spec, by the restricted
// standard at version v. It returns "" when the pod meets it, else the
// library's reasons worded as the API server's PodSecurity admission words
// a refusal: violates PodSecurity "restricted:v1.37": allowPrivilegeEscalation
// != false (container "copy" must set securityContext.allowPrivilegeEscalation=false), ...
func Restricted(v Version, meta *metav1.ObjectMeta, spec *corev1.PodSpec) string {
	lv := api.LevelVersion{Level: api.LevelRestricted, Version: v.api()}
	result := policy.AggregateCheckResults(evaluator.EvaluatePod(lv, meta, spec))
	if result.Allowed {
		return ""
	}
	return fmt.Sprintf("violates PodSecurity %q: %s", lv.String(), result.ForbiddenDetail())
}

// ControlPlaneTaints are the taints that keep workloads off control-plane
// nodes (the second is the name before Kubernetes 1.24). Tolerating one
// lets a pod run next to the API server's credentials.
var ControlPlaneTaints = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

// Placement judges where a pod may run: never on a node it names itself
// (spec.nodeName bypasses the scheduler and its checks), never on a
// control-plane node, whether by tolerating the control-plane taints, by
// tolerating every taint (a toleration without a key and with operator
// Exists), or by selecting the control-plane label. fld is the path of
// spec in the object the user wrote.
func Placement(fld *field.Path, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.NodeName != "" {
		errs = append(errs, field.Forbidden(fld.Child("nodeName"),
			"may not be set: the pod would bypass the scheduler and run on the node of its choosing"))
	}
	for i, t := range spec.Tolerations {
		switch {
		case t.Key == "" && t.Operator == corev1.TolerationOpExists:
			errs = append(errs, field.Forbidden(fld.Child("tolerations").Index(i),
				"may not tolerate every taint: the pod could run on control-plane nodes"))
		case isControlPlaneKey(t.Key):
			errs = append(errs, field.Forbidden(fld.Child("tolerations").Index(i).Child("key"),
				fmt.Sprintf("may not tolerate %s: the pod could run on control-plane nodes", t.Key)))
		}
	}
	for key := range spec.NodeSelector {
		if isControlPlaneKey(key) {
			errs = append(errs, field.Forbidden(fld.Child("nodeSelector").Key(key),
				"may not select control-plane nodes"))
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		path := fld.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		if terms != nil {
			for i, term := range terms.NodeSelectorTerms {
				for j, r := range term.MatchExpressions {
					if isControlPlaneKey(r.Key) && (r.Operator == corev1.NodeSelectorOpIn || r.Operator == corev1.NodeSelectorOpExists) {
						errs = append(errs, field.Forbidden(path.Index(i).Child("matchExpressions").Index(j),
							"may not select control-plane nodes"))
					}
				}
			}
		}
	}
	return errs
}

func isControlPlaneKey(key string) bool {
	for _, taint := range ControlPlaneTaints {
		if key == taint {
			return true
		}
	}
	return false
}
