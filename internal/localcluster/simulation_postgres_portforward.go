package localcluster

// Port forwarding to simulated PostgreSQL pods, as a kubelet serves it.
//
// kubectl port-forward (and any client of the pods/portforward
// subresource) asks the API server, which asks the pod's node: the
// address and port of the Node's status, where a kubelet listens. kwok is
// the local cluster's kubelet: started with --node-ip=127.0.0.1 and
// --node-port=<its server's port>, its nodes point the API server at its
// own server on loopback, which forwards as its PortForward objects say
// (kwok's API, kwok.x-k8s.io/v1alpha1, --enable-crds=PortForward). The
// PostgreSQL simulation writes one for each pod it runs: the pod's
// PostgreSQL port to the address of the pod's network namespace, where
// its PostgreSQL listens. Nothing dials a pod IP that the API shows.

import (
	"context"
	"embed"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/pgspec"
)

// kwokCRDs is kwok's PortForward CRD, as sigs.k8s.io/kwok v0.8.0 (the
// version hack/tools/kwok pins) ships it in kustomize/crd/bases/.
//
//go:embed kwok_crds/*.yaml
var kwokCRDs embed.FS

// kwokPortForwardCRD is what kwok's --enable-crds takes for it.
const kwokPortForwardCRD = "PortForward"

// installKwokCRDs creates kwok's PortForward CRD, before kwok starts to
// watch its objects.
func installKwokCRDs(ctx context.Context, cl client.Client) error {
	return createEmbeddedObjects(ctx, cl, kwokCRDs, "kwok_crds")
}

// forwardPort writes the PortForward of a PostgreSQL pod: its PostgreSQL
// port to its namespace's address. The pod owns it, so it goes with the
// pod; a pod of the same name later gets its own, applied over it.
func (s *postgresSimulation) forwardPort(ctx context.Context, pod *corev1.Pod, inst *pgInstance) error {
	pf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "PortForward",
		"metadata": map[string]any{
			"name":      pod.Name,
			"namespace": pod.Namespace,
			"ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "Pod", "name": pod.Name, "uid": string(pod.UID),
			}},
		},
		"spec": map[string]any{
			"forwards": []any{map[string]any{
				"ports":  []any{int64(pgspec.Port)},
				"target": map[string]any{"address": inst.addr.String(), "port": int64(pgspec.Port)},
			}},
		},
	}}
	if err := s.cl.Patch(ctx, pf, client.Apply, client.FieldOwner("localcluster-simulation"), client.ForceOwnership); err != nil {
		return fmt.Errorf("write the PortForward of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
