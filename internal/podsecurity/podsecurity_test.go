package podsecurity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestVersionOf(t *testing.T) {
	tests := map[string]string{
		"v1.37.2":             "v1.37",
		"v1.36.4-gke.1200":    "v1.36",
		"v1.30.0+k3s1":        "v1.30",
		"v1.25":               "v1.25",
		"v1.99.0":             "v1.99", // newer than the library: judged as its latest
		"":                    "latest",
		"v2.0.0":              "latest",
		"1.37.2":              "latest",
		"v1.37x":              "latest",
		"v1.123456789.0":      "latest",
		"v1.0.0-alpha.0.1234": "v1.0",
	}
	for in, want := range tests {
		if got := VersionOf(in).String(); got != want {
			t.Errorf("VersionOf(%q) = %s, want %s", in, got, want)
		}
	}
	if got := (Version{}).String(); got != "latest" {
		t.Errorf("zero Version is %s, want latest", got)
	}
}

// restrictedPod meets the restricted standard at every version.
func restrictedPod() *corev1.PodSpec {
	return &corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}},
	}
}

// The standard is the library's at the version asked for: a pod that keeps
// its capabilities meets restricted v1.21, which did not require dropping
// them, but not v1.22 or later; the zero Version is the latest.
func TestRestrictedIsTheLibrarysAtTheVersion(t *testing.T) {
	meta := &metav1.ObjectMeta{}
	if got := Restricted(Latest(), meta, restrictedPod()); got != "" {
		t.Fatalf("a restricted pod was refused: %s", got)
	}
	keeps := restrictedPod()
	keeps.Containers[0].SecurityContext.Capabilities = nil
	if got := Restricted(VersionOf("v1.21.3"), meta, keeps); got != "" {
		t.Errorf("refused at v1.21: %s", got)
	}
	for _, v := range []Version{VersionOf("v1.22.0"), VersionOf("v1.37.2"), VersionOf("v1.99.0"), {}} {
		got := Restricted(v, meta, keeps)
		want := `violates PodSecurity "restricted:` + v.String() + `": unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])`
		if got != want {
			t.Errorf("at %s:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestPlacement(t *testing.T) {
	path := field.NewPath("spec")
	tests := map[string]struct {
		spec corev1.PodSpec
		want []string
	}{
		"anywhere": {corev1.PodSpec{}, nil},
		"ordinary": {corev1.PodSpec{
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "backup"},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpDoesNotExist},
				}}},
			}}},
		}, nil},
		"nodeName": {corev1.PodSpec{NodeName: "n1"}, []string{"spec.nodeName"}},
		"tolerations": {corev1.PodSpec{Tolerations: []corev1.Toleration{
			{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists},
			{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule},
			{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		}}, []string{"spec.tolerations[0].key", "spec.tolerations[1].key", "spec.tolerations[2]"}},
		"selector": {corev1.PodSpec{NodeSelector: map[string]string{"node-role.kubernetes.io/master": "true"}},
			[]string{"spec.nodeSelector[node-role.kubernetes.io/master]"}},
		"affinity": {corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpIn, Values: []string{""}}}},
			},
		}}}}, []string{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0]"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			errs := Placement(path, &tt.spec)
			var got []string
			for _, err := range errs {
				got = append(got, err.Field)
				if !strings.Contains(err.Error(), "Forbidden") {
					t.Errorf("%v is not Forbidden", err)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("refused %v, want %v", got, tt.want)
			}
		})
	}
}
