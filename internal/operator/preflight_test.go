package operator

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rulesOf reads the ClusterRole and the Role named platform-operator from
// deploy/rbac.yaml, which controller-gen generates from the RBAC markers.
func rulesOf(t *testing.T) (cluster, namespaced []rbacv1.PolicyRule) {
	t.Helper()
	data, err := os.ReadFile("../../deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Metadata.Name != "platform-operator" {
			continue
		}
		switch obj.Kind {
		case "ClusterRole":
			cluster = obj.Rules
		case "Role":
			namespaced = obj.Rules
		}
	}
	return cluster, namespaced
}

func grants(rules []rbacv1.PolicyRule, p permission, verb string) bool {
	resource := p.resource
	if p.subresource != "" {
		resource += "/" + p.subresource
	}
	for _, r := range rules {
		if slices.Contains(r.APIGroups, p.group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// The permissions the preflight check asks for are exactly those that
// deploy/rbac.yaml grants: none missing (the operator would fail to start),
// none extra (least privilege).
func TestPreflightPermissionsMatchTheGeneratedRBAC(t *testing.T) {
	cluster, namespaced := rulesOf(t)
	if len(cluster) == 0 || len(namespaced) == 0 {
		t.Fatal("deploy/rbac.yaml has no platform-operator ClusterRole or Role")
	}
	required := 0
	for _, p := range requiredPermissions {
		for _, verb := range p.verbs {
			required++
			if !grants(cluster, p, verb) {
				t.Errorf("deploy/rbac.yaml does not grant %s", describePermission(verb, p, ""))
			}
		}
	}
	for _, verb := range leaderElectionPermission.verbs {
		if !grants(namespaced, leaderElectionPermission, verb) {
			t.Errorf("the leader election Role does not grant %s leases", verb)
		}
	}
	granted := 0
	for _, r := range cluster {
		granted += len(r.APIGroups) * len(r.Resources) * len(r.Verbs)
	}
	if granted != required {
		t.Errorf("deploy/rbac.yaml grants %d (group, resource, verb) triples, the operator checks %d: keep requiredPermissions and the RBAC markers in step", granted, required)
	}
}

// Least privilege: never Secrets, never writes to pods, never the verbs that
// lift privileges.
func TestRBACGrantsNothingDangerous(t *testing.T) {
	cluster, namespaced := rulesOf(t)
	for _, r := range append(cluster, namespaced...) {
		for _, res := range r.Resources {
			if res == "secrets" || res == "*" {
				t.Errorf("grants access to %s: %+v", res, r)
			}
			if res == "pods" && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				t.Errorf("grants writes to pods: %+v", r)
			}
		}
		for _, verb := range r.Verbs {
			if slices.Contains([]string{"escalate", "bind", "impersonate", "*"}, verb) {
				t.Errorf("grants %s: %+v", verb, r)
			}
		}
	}
}
