package postgrescluster

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

func TestDesiredNetworkPolicy(t *testing.T) {
	pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "uid"}}
	policy := DesiredNetworkPolicy(pg)
	if policy == nil {
		t.Fatal("no NetworkPolicy by default")
	}
	if got := policy.Spec.PodSelector.MatchLabels; len(got) != 1 || got[v1alpha1.PostgresClusterLabel] != "db" {
		t.Errorf("it selects %v, want the cluster's pods", got)
	}
	if len(policy.Spec.Ingress) != 2 {
		t.Fatalf("%d ingress rules, want PostgreSQL's and the status port's", len(policy.Spec.Ingress))
	}
	postgresRule, statusRule := policy.Spec.Ingress[0], policy.Spec.Ingress[1]
	if port := postgresRule.Ports[0].Port.IntValue(); port != pgspec.Port {
		t.Errorf("the first rule is of port %d, want %d", port, pgspec.Port)
	}
	if port := statusRule.Ports[0].Port.IntValue(); port != pgspec.StatusPort || len(statusRule.From) != 0 {
		t.Errorf("the status port's rule is of port %d from %v, want %d from anywhere (the kubelet's probes)", port, statusRule.From, pgspec.StatusPort)
	}
	if len(statusRule.Ports) != 2 || statusRule.Ports[1].Port.IntValue() != pgspec.MetricsPort {
		t.Errorf("the status port's rule has ports %v, want the metrics port %d too, from anywhere (Prometheus; scrapes are authorized)", statusRule.Ports, pgspec.MetricsPort)
	}
	allows := func(rule networkingv1.NetworkPolicyIngressRule, set map[string]string) bool {
		for _, peer := range rule.From {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err == nil && selector.Matches(labels.Set(set)) {
				return true
			}
		}
		return false
	}
	for _, tt := range []struct {
		who    string
		labels map[string]string
		want   bool
	}{
		{"an instance", map[string]string{v1alpha1.PostgresClusterLabel: "db", v1alpha1.PostgresInstanceLabel: "db-2"}, true},
		{"a backup's pod", map[string]string{v1alpha1.BackupJobLabel: "nightly"}, true},
		{"a labelled client", map[string]string{v1alpha1.PostgresClientLabel: "db"}, true},
		{"another cluster's client", map[string]string{v1alpha1.PostgresClientLabel: "other"}, false},
		{"another cluster's instance", map[string]string{v1alpha1.PostgresClusterLabel: "other"}, false},
		{"any pod", map[string]string{"app": "web"}, false},
	} {
		if got := allows(postgresRule, tt.labels); got != tt.want {
			t.Errorf("%s (%v) reaches PostgreSQL: %t, want %t", tt.who, tt.labels, got, tt.want)
		}
	}

	other := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}
	pg.Spec.NetworkPolicy = &v1alpha1.PostgresNetworkPolicy{AllowedClients: []networkingv1.NetworkPolicyPeer{other}}
	from := DesiredNetworkPolicy(pg).Spec.Ingress[0].From
	if last := from[len(from)-1]; last.NamespaceSelector == nil || last.NamespaceSelector.MatchLabels["team"] != "web" {
		t.Errorf("allowedClients are not among the peers: %v", from)
	}
	pg.Spec.NetworkPolicy.Enabled = ptr.To(false)
	if DesiredNetworkPolicy(pg) != nil {
		t.Error("a NetworkPolicy though spec.networkPolicy.enabled is false")
	}
}
