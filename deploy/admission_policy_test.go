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
// events about what it does, its leader election Lease, the reviews that
// guard /metrics and the tokens it requests for a Tenant's ServiceAccount.
// None of them runs anything or holds data of others.
var unguarded = map[string]bool{
	"example.com/*":                             true,
	"/serviceaccounts/token":                    true,
	"/events":                                   true,
	"events.k8s.io/events":                      true,
	"coordination.k8s.io/leases":                true,
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

// Every resource that a generated role lets the operator write is guarded
// by the admission policy, unless it is one of the few writes listed in
// unguarded: a new kind whose controller writes a new resource must add it
// to the policy.
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
// resources only, so that the operator can still request tokens, patch the
// status of its resources and write events.
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
				g.Expect(resource).To(Equal("pods/ephemeralcontainers"), "the only subresource that adds containers")
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
