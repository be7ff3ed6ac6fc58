package domainmetrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// A Tenant is cluster-scoped: its namespace label is empty, which
// Prometheus stores as no label, so that every kind's series carry the
// same label names.
var (
	tenantNamespacesDesired = prometheus.NewDesc("platform_operator_tenant_namespaces_desired",
		"Namespaces a Tenant asks for (spec.namespaces).", objectLabels, nil)
	tenantNamespacesActive = prometheus.NewDesc("platform_operator_tenant_namespaces_active",
		"Namespaces of a Tenant that are Active: the tenant's, with what its spec grants in place.", objectLabels, nil)
	tenantCredentialsExpiry = prometheus.NewDesc("platform_operator_tenant_credentials_expiry_timestamp_seconds",
		"When the token in a Tenant's credentials Secret expires (status.credentials.expiresAt), in seconds since the epoch; absent when the Tenant has no credentials.", objectLabels, nil)
	tenantCredentialsIssued = prometheus.NewDesc("platform_operator_tenant_credentials_issued_timestamp_seconds",
		"When the token in a Tenant's credentials Secret was issued (status.credentials.issuedAt), in seconds since the epoch; with the expiry it gives the token's life, which the operator renews at 80 %.", objectLabels, nil)
)

var tenantKind = kind{
	descs: []*prometheus.Desc{tenantNamespacesDesired, tenantNamespacesActive, tenantCredentialsExpiry, tenantCredentialsIssued},
	collect: func(ctx context.Context, r client.Reader, _ map[string]bool, emit emitter) error {
		var list v1alpha1.TenantList
		if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list Tenants from the cache: %w", err)
		}
		for i := range list.Items {
			t := &list.Items[i]
			active := 0
			for _, ns := range t.Status.Namespaces {
				if ns.Phase == v1alpha1.NamespaceActive {
					active++
				}
			}
			emit.gauge(tenantNamespacesDesired, float64(len(t.Spec.Namespaces)), t.Namespace, t.Name)
			emit.gauge(tenantNamespacesActive, float64(active), t.Namespace, t.Name)
			if c := t.Status.Credentials; c != nil {
				if c.ExpiresAt != nil {
					emit.gauge(tenantCredentialsExpiry, unixSeconds(*c.ExpiresAt), t.Namespace, t.Name)
				}
				if c.IssuedAt != nil {
					emit.gauge(tenantCredentialsIssued, unixSeconds(*c.IssuedAt), t.Namespace, t.Name)
				}
			}
			emit.conditions(Tenant, t, t.Status.Conditions)
		}
		return nil
	},
}
