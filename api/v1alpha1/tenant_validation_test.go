package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// These tests send Tenants to a real API server with the CRD of deploy/
// (suite_test.go) and check which it refuses, that the refusal names the
// field, and what it defaults.

// tenantAPIServer is the suite's API server, for one test.
func tenantAPIServer(t *testing.T) client.Client {
	t.Helper()
	suite.NeedsAPIServer(t)
	return suite.Client
}

// tenant parses a Tenant from YAML.
func tenant(t *testing.T, name, yamlSpec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := "apiVersion: example.com/v1alpha1\nkind: Tenant\nmetadata:\n  name: " + name + "\n" + yamlSpec
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("test case YAML: %v", err)
	}
	return obj
}

func TestTenantValidation(t *testing.T) {
	c := tenantAPIServer(t)

	t.Run("invalid specs are refused naming the field", func(t *testing.T) {
		tests := []struct{ name, spec, field string }{
			{"no namespaces", "spec: {namespaces: []}", "spec.namespaces"},
			{"namespaces missing", "spec: {}", "spec.namespaces"},
			{"duplicate namespace", "spec: {namespaces: [a, a]}", "spec.namespaces[1]"},
			{"upper-case namespace", "spec: {namespaces: [Team]}", "spec.namespaces[0]"},
			{"namespace too long", "spec: {namespaces: [" + strings.Repeat("a", 64) + "]}", "spec.namespaces[0]"},
			{"kube-system", "spec: {namespaces: [kube-system]}", "spec.namespaces"},
			{"default", "spec: {namespaces: [team, default]}", "spec.namespaces"},
			{"credentials without service account", "spec: {namespaces: [a], credentials: {}}", "spec.credentials"},
			{"expiration too short", "spec: {namespaces: [a], serviceAccount: {}, credentials: {expiration: 5m}}", "spec.credentials.expiration"},
			{"expiration too long", "spec: {namespaces: [a], serviceAccount: {}, credentials: {expiration: 721h}}", "spec.credentials.expiration"},
			{"expiration not a duration", "spec: {namespaces: [a], serviceAccount: {}, credentials: {expiration: tomorrow}}", "spec.credentials.expiration"},
			{"default service account", "spec: {namespaces: [a], serviceAccount: {name: default}}", "spec.serviceAccount.name"},
			{"owner kind", "spec: {namespaces: [a], owners: [{kind: Robot, name: r}]}", "spec.owners[0].kind"},
			{"service account owner without namespace", "spec: {namespaces: [a], owners: [{kind: ServiceAccount, name: ci}]}", "spec.owners[0].namespace"},
			{"user owner with namespace", "spec: {namespaces: [a], owners: [{kind: User, name: alice, namespace: a}]}", "spec.owners[0].namespace"},
			{"user owner with the wrong apiGroup", "spec: {namespaces: [a], owners: [{kind: User, name: alice, apiGroup: apps}]}", "spec.owners[0].apiGroup"},
			{"duplicate owners", "spec: {namespaces: [a], owners: [{kind: User, name: alice}, {kind: User, name: alice}]}", "spec.owners"},
			{"owner role with a slash", "spec: {namespaces: [a], ownerRole: a/b}", "spec.ownerRole"},
			{"isolation", "spec: {namespaces: [a], isolation: Partial}", "spec.isolation"},
			{"pod security", "spec: {namespaces: [a], podSecurity: none}", "spec.podSecurity"},
			{"deletion policy", "spec: {namespaces: [a], deletionPolicy: Destroy}", "spec.deletionPolicy"},
			{"empty quota", "spec: {namespaces: [a], quota: {hard: {}}}", "spec.quota.hard"},
			{"default below request", "spec: {namespaces: [a], quota: {hard: {pods: 10}, containerDefaults: {defaultRequest: {cpu: 2}, default: {cpu: 1}}}}", "spec.quota.containerDefaults.default"},
			{"empty container defaults", "spec: {namespaces: [a], quota: {hard: {pods: 10}, containerDefaults: {}}}", "spec.quota.containerDefaults"},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				g := NewWithT(t)
				err := c.Create(t.Context(), tenant(t, fmt.Sprintf("invalid-%d", i), tt.spec))
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.field))
			})
		}
	})

	t.Run("names that cannot be a label value are refused", func(t *testing.T) {
		for _, name := range []string{"1team", strings.Repeat("a", 64), "team.a"} {
			g := NewWithT(t)
			err := c.Create(t.Context(), tenant(t, name, "spec: {namespaces: [a]}"))
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
			g.Expect(err.Error()).To(ContainSubstring("metadata.name"), name)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		g := NewWithT(t)
		obj := tenant(t, "defaults", "spec: {namespaces: [a], serviceAccount: {}, credentials: {}, owners: [{kind: User, name: alice}]}")
		g.Expect(c.Create(t.Context(), obj)).To(Succeed())
		spec := obj.Object["spec"].(map[string]any)
		g.Expect(spec).To(HaveKeyWithValue("ownerRole", "admin"))
		g.Expect(spec).To(HaveKeyWithValue("isolation", "SameTenant"))
		g.Expect(spec).To(HaveKeyWithValue("podSecurity", "restricted"))
		g.Expect(spec).To(HaveKeyWithValue("deletionPolicy", "Retain"))
		g.Expect(spec).To(HaveKeyWithValue("serviceAccount", HaveKeyWithValue("name", "tenant")))
		g.Expect(spec).To(HaveKeyWithValue("credentials", And(
			HaveKeyWithValue("secretName", "tenant-kubeconfig"),
			HaveKeyWithValue("expiration", "24h"))))
	})

	t.Run("the home namespace is immutable, the others are not", func(t *testing.T) {
		g := NewWithT(t)
		obj := tenant(t, "home", "spec: {namespaces: [home, b]}")
		g.Expect(c.Create(t.Context(), obj)).To(Succeed())

		g.Expect(unstructured.SetNestedStringSlice(obj.Object, []string{"home", "c", "d"}, "spec", "namespaces")).To(Succeed())
		g.Expect(c.Update(t.Context(), obj)).To(Succeed(), "namespaces may be added and removed")

		g.Expect(unstructured.SetNestedStringSlice(obj.Object, []string{"other", "c"}, "spec", "namespaces")).To(Succeed())
		err := c.Update(t.Context(), obj)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("home"))
	})
}
