package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/deploy"
	"example.com/platform-operator/internal/platform"
)

// unguarded are the writes of the operator that the admission policy leaves
// alone on purpose: its own custom resources (their status and finalizers),
// events about what it does and the reviews that guard /metrics. None of them runs anything, holds data of others or
// grants anything.
var unguarded = map[string]bool{
	"example.com/*":                             true,
	"/events":                                   true,
	"events.k8s.io/events":                      true,
	"authentication.k8s.io/tokenreviews":        true,
	"authorization.k8s.io/subjectaccessreviews": true,
}

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

func readPolicy(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	data, err := os.ReadFile("base/admission_policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n---\n")
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := yaml.UnmarshalStrict([]byte(first), policy); err != nil {
		t.Fatal(err)
	}
	return policy
}

// Every resource or subresource that a generated role lets the operator
// write (token requests among them) is guarded by the admission policy,
// unless it is one of the few writes listed in unguarded: a new kind whose
// controller writes a new resource must add it to the policy.
func TestAdmissionPolicyGuardsEveryWriteTheRolesGrant(t *testing.T) {
	g := NewWithT(t)
	policy := readPolicy(t)
	guarded := map[string]bool{}
	for _, rule := range policy.Spec.MatchConstraints.ResourceRules {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				guarded[group+"/"+resource] = true
			}
		}
	}
	roles, err := filepath.Glob("components/*/role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	components := []string{deploy.BaseComponent}
	for _, role := range roles {
		components = append(components, filepath.Base(filepath.Dir(role)))
	}
	for _, component := range components {
		cluster, own, err := deploy.Rules(component)
		g.Expect(err).NotTo(HaveOccurred())
		for _, rule := range append(cluster, own...) {
			if !slices.ContainsFunc(rule.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) }) {
				continue
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					if unguarded[group+"/*"] || unguarded[group+"/"+resource] {
						continue
					}
					g.Expect(guarded).To(HaveKey(group+"/"+resource),
						"component %s may write %s (group %q), which deploy/base/admission_policy.yaml does not guard", component, resource, group)
				}
			}
		}
	}
}

// The policy applies to the operator's ServiceAccount only, and to main
// resources, token requests and the ephemeral containers of pods only, so
// that the operator can still patch the status of its resources and write
// events.
func TestAdmissionPolicyAppliesToTheOperatorsMainResourcesOnly(t *testing.T) {
	g := NewWithT(t)
	policy := readPolicy(t)
	g.Expect(policy.Spec.MatchConditions).To(HaveLen(1))
	g.Expect(policy.Spec.MatchConditions[0].Expression).To(Equal(
		"request.userInfo.username == 'system:serviceaccount:" + platform.Namespace + ":" + platform.Name + "'"))
	for _, rule := range policy.Spec.MatchConstraints.ResourceRules {
		for _, resource := range rule.Resources {
			g.Expect(resource).NotTo(ContainSubstring("*"))
			if strings.Contains(resource, "/") {
				g.Expect(resource).To(BeElementOf("pods/ephemeralcontainers", "serviceaccounts/token"),
					"the only subresources that add containers or issue tokens")
			}
		}
	}
	var labelled string
	for _, v := range policy.Spec.Variables {
		if v.Name == "labelled" {
			labelled = v.Expression
		}
	}
	g.Expect(labelled).To(ContainSubstring("'" + platform.ManagedByLabel + "'"))
	g.Expect(labelled).To(ContainSubstring("'" + platform.Name + "'"))
	g.Expect(labelled).To(ContainSubstring("'" + platform.LegacyName + "'"))
}
