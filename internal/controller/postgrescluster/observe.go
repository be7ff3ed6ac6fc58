package postgrescluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// observation is what one reconcile saw of a cluster's instances.
type observation struct {
	// pods are the cluster's pods by name, as cached.
	pods map[string]*corev1.Pod
	// members are the instances 1..max(spec.instances, highest pod), for
	// decide.
	members []member
	lease   lease
	// claims are the instances' claims by name, nil where there is none.
	claims map[string]*corev1.PersistentVolumeClaim
}

// observe reads the cluster's pods, their reports, the primary's Lease and
// the nodes of the instances, from the cache.
func (r *Reconciler) observe(ctx context.Context, pg *v1alpha1.PostgresCluster, desiredHash map[string]string) (*observation, error) {
	obs := &observation{pods: map[string]*corev1.Pod{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pg.Namespace), client.MatchingLabelsSelector{Selector: objectsOf(pg.Name)}); err != nil {
		return nil, fmt.Errorf("list the pods of PostgresCluster %s: %w", pg.Name, err)
	}
	highest := int(pg.Spec.Instances)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !metav1IsControlledBy(pod, pg) {
			continue
		}
		obs.pods[pod.Name] = pod
		if n := ordinalOf(pg.Name, pod.Name); n > highest {
			highest = n
		}
	}

	l := &coordinationv1.Lease{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: leaseName(pg)}, l); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("get the primary's Lease of PostgresCluster %s: %w", pg.Name, err)
	default:
		obs.lease = leaseOf(l)
	}

	for n := 1; n <= highest; n++ {
		name := instanceName(pg.Name, n)
		m := member{name: name, fencedBySpec: fencedOnPurpose(pg, name)}
		if pod := obs.pods[name]; pod != nil && pod.DeletionTimestamp.IsZero() {
			m.exists = true
			m.report = reportOf(pod)
			m.current = pod.Annotations[SpecHashAnnotation] == desiredHash[name]
			if m.report != nil && m.report.Node != "" {
				m.nodeDraining = r.nodeCordoned(ctx, m.report.Node)
			}
		}
		// An instance beyond spec.instances is leaving: a primary hands
		// over as from a drained node.
		if n > int(pg.Spec.Instances) {
			m.nodeDraining = true
		}
		obs.members = append(obs.members, m)
	}
	return obs, nil
}

// nodeCordoned tells whether a node is marked unschedulable: a drain has
// begun, and its pods will be evicted.
func (r *Reconciler) nodeCordoned(ctx context.Context, name string) bool {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		return false
	}
	return node.Spec.Unschedulable
}

// reportOf reads the instance manager's report on a pod; nil when there is
// none or it cannot be read.
func reportOf(pod *corev1.Pod) *v1alpha1.PostgresInstanceReport {
	data, ok := pod.Annotations[v1alpha1.PostgresReportAnnotation]
	if !ok {
		return nil
	}
	report := &v1alpha1.PostgresInstanceReport{}
	if err := json.Unmarshal([]byte(data), report); err != nil {
		return nil
	}
	return report
}

func leaseOf(l *coordinationv1.Lease) lease {
	var out lease
	if l.Spec.HolderIdentity != nil {
		out.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		out.renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		out.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return out
}

// ordinalOf is n of the instance CLUSTER-n, 0 for another name.
func ordinalOf(cluster, instance string) int {
	rest, ok := strings.CutPrefix(instance, cluster+"-")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > maxInstances {
		return 0
	}
	return n
}

// metav1IsControlledBy tells whether pg is obj's controller.
func metav1IsControlledBy(obj client.Object, pg *v1alpha1.PostgresCluster) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID == pg.UID
		}
	}
	return false
}

// fencedOnPurpose tells whether instance is fenced on purpose: named by
// spec.fencedInstances, or by a BackupJob's run for a cold snapshot.
func fencedOnPurpose(pg *v1alpha1.PostgresCluster, instance string) bool {
	return slices.Contains(pg.Spec.FencedInstances, instance) || pg.Annotations[v1alpha1.PostgresBackupFenceAnnotation] == instance
}
