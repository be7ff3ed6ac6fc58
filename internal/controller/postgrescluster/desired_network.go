package postgrescluster

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// DesiredNetworkPolicy is the NetworkPolicy CLUSTER of the cluster's pods,
// nil when spec.networkPolicy turns it off. PostgreSQL's port admits the
// cluster's own instances (replication, clones, rewinds), the pods of its
// BackupJobs' runs and drills (base backups, restore checks), the pods of
// the namespace labelled as its clients, and the spec's allowedClients.
// The instance manager's status port stays open to all: the kubelet's
// probes reach it from the node, which some network plugins count as a
// peer. So does its metrics port: Prometheus runs wherever it runs, and
// every scrape is authorized by the API server (a token allowed to get
// /metrics).
func DesiredNetworkPolicy(pg *v1alpha1.PostgresCluster) *networkingv1.NetworkPolicy {
	if !pg.Spec.NetworkPolicyEnabled() {
		return nil
	}
	tcp := corev1.ProtocolTCP
	postgresPort := intstr.FromInt32(pgspec.Port)
	statusPort := intstr.FromInt32(pgspec.StatusPort)
	metricsPort := intstr.FromInt32(pgspec.MetricsPort)
	clients := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(pg)}},
		{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: v1alpha1.BackupJobLabel, Operator: metav1.LabelSelectorOpExists}}}},
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.PostgresClientLabel: pg.Name}}},
	}
	if np := pg.Spec.NetworkPolicy; np != nil {
		for _, peer := range np.AllowedClients {
			clients = append(clients, *peer.DeepCopy())
		}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: pg.Name, Namespace: pg.Namespace, Labels: clusterLabels(pg),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pg, v1alpha1.GroupVersion.WithKind(kind))}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(pg)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &postgresPort}}, From: clients},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &statusPort}, {Protocol: &tcp, Port: &metricsPort}}},
			},
		},
	}
}
