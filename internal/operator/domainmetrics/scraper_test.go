package domainmetrics

import (
	"bytes"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The identity the PodMonitor scrapes the instances with may get /metrics
// and nothing else: its ServiceAccount is bound to
// platform-operator-metrics-reader alone, which grants get on /metrics
// alone, and its token Secret is that ServiceAccount's.
func TestScraperMayOnlyGetMetrics(t *testing.T) {
	data, err := os.ReadFile("../../../deploy/components/monitoring/scraper.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var account corev1.ServiceAccount
	var secret corev1.Secret
	var bindings []rbacv1.ClusterRoleBinding
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		var into any
		switch head.Kind {
		case "ServiceAccount":
			into = &account
		case "Secret":
			into = &secret
		case "ClusterRoleBinding":
			bindings = append(bindings, rbacv1.ClusterRoleBinding{})
			into = &bindings[len(bindings)-1]
		default:
			t.Fatalf("scraper.yaml has a %s", head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatal(err)
		}
	}
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != account.Name || secret.Namespace != account.Namespace {
		t.Errorf("the Secret %s/%s is not a token of ServiceAccount %s/%s", secret.Namespace, secret.Name, account.Namespace, account.Name)
	}
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: account.Name, Namespace: account.Namespace}}
	if len(bindings) != 1 || bindings[0].RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "platform-operator-metrics-reader"}) ||
		!slices.Equal(bindings[0].Subjects, want) {
		t.Errorf("bindings %+v, want one of platform-operator-metrics-reader to %v", bindings, want)
	}
	data, err = os.ReadFile("../../../deploy/base/metrics_reader_role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(role.Rules[0].Verbs, []string{"get"}) ||
		len(role.Rules[0].Resources) != 0 || len(role.Rules[0].APIGroups) != 0 || len(role.Rules[0].ResourceNames) != 0 {
		t.Errorf("platform-operator-metrics-reader grants %+v, want get /metrics alone", role.Rules)
	}
}
