package domainmetrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	examplev1 "example.com/platform-operator/api/v1"
)

var objectLabels = []string{"namespace", "name"}

var (
	websiteReplicasDesired = prometheus.NewDesc("platform_operator_website_replicas_desired",
		"Pods a Website asks for (spec.replicas).", objectLabels, nil)
	websiteReplicasReady = prometheus.NewDesc("platform_operator_website_replicas_ready",
		"Pods of a Website's Deployment that are ready to serve (status.readyReplicas).", objectLabels, nil)
)

var websiteKind = kind{
	descs: []*prometheus.Desc{websiteReplicasDesired, websiteReplicasReady},
	collect: func(ctx context.Context, r client.Reader, _ map[string]bool, emit emitter) error {
		var list examplev1.WebsiteList
		if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list Websites from the cache: %w", err)
		}
		for i := range list.Items {
			w := &list.Items[i]
			// The API server defaults spec.replicas to 1; an object
			// without it is one the defaulting never saw.
			desired := int32(1)
			if w.Spec.Replicas != nil {
				desired = *w.Spec.Replicas
			}
			emit.gauge(websiteReplicasDesired, float64(desired), w.Namespace, w.Name)
			emit.gauge(websiteReplicasReady, float64(w.Status.ReadyReplicas), w.Namespace, w.Name)
			emit.conditions(Website, w, w.Status.Conditions)
		}
		return nil
	},
}
