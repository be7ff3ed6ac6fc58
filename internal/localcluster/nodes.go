package localcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kwokNodeAnnotation marks the nodes that kwok simulates.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// createNodes registers the kwok nodes, as kubelets would register
// themselves. kwok then marks them Ready and runs the pods bound to them.
func createNodes(ctx context.Context, clientset kubernetes.Interface, opts Options) error {
	capacity := corev1.ResourceList{}
	for name, value := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:    opts.NodeCPU,
		corev1.ResourceMemory: opts.NodeMemory,
		corev1.ResourcePods:   fmt.Sprint(opts.NodePods),
	} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("node capacity %s %q: %w", name, value, err)
		}
		capacity[name] = q
	}
	for i := range opts.Nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname": name,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					"type":                   "kwok",
				},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	return nil
}

// nodesReady fails until want nodes report Ready.
func nodesReady(ctx context.Context, clientset kubernetes.Interface, want int) error {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ready := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready < want {
		return fmt.Errorf("%d of %d nodes Ready", ready, want)
	}
	return nil
}

// httpGetOK fails unless url answers 200.
func httpGetOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
