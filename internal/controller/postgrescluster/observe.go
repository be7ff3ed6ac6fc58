package postgrescluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
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
	// routed are the pods whose role label is the one the election gives
	// them, as seen or as written by this reconcile: the Services route by
	// it.
	routed map[string]bool
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
		if !controlledBy(pod, pg) {
			continue
		}
		obs.pods[pod.Name] = pod
		if n := pgspec.Ordinal(pg.Name, pod.Name); n > highest {
			highest = n
		}
	}

	l := &coordinationv1.Lease{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: pgspec.LeaseName(pg.Name)}, l); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("get the primary's Lease of PostgresCluster %s: %w", pg.Name, err)
	default:
		obs.lease = leaseOf(l)
	}

	for n := 1; n <= highest; n++ {
		name := pgspec.InstanceName(pg.Name, n)
		m := memberOf(pg, name, obs.pods[name], desiredHash[name])
		if m.report != nil && m.report.Node != "" {
			m.nodeDraining = r.nodeCordoned(ctx, m.report.Node)
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

// memberOf is what the pod of instance name tells of it, but for its
// node's drain: that it runs, its report, whether it runs the spec of hash.
// An instance without a pod, or whose pod is being deleted, does not run;
// nor does one whose pod is over (phase Failed or Succeeded: evicted under
// node pressure, stopped by a node's shutdown), which nothing restarts and
// whose report, its last before it stopped, says nothing of now.
func memberOf(pg *v1alpha1.PostgresCluster, name string, pod *corev1.Pod, hash string) member {
	m := member{name: name, fencedBySpec: pgspec.FencedOnPurpose(pg, name)}
	if pod == nil || !pod.DeletionTimestamp.IsZero() {
		return m
	}
	if how, over := podOver(pod); over {
		m.over = how
		return m
	}
	m.exists = true
	m.report = reportOf(pod)
	m.specCurrent = pod.Annotations[SpecHashAnnotation] == hash
	return m
}

// podOver tells whether pod is over: phase Failed or Succeeded, every
// container stopped for good. A pod the operator makes restarts its
// containers itself, so it ends only when the node gives it up: evicted
// under pressure, or stopped by a graceful node shutdown, which leave it in
// place without a deletionTimestamp. how says so for messages: "phase
// Failed, reason Evicted".
func podOver(pod *corev1.Pod) (how string, over bool) {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
	default:
		return "", false
	}
	how = "phase " + string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		how += ", reason " + pod.Status.Reason
	}
	return how, true
}

// setClaims records the instances' claims, and which of them are older
// than the cluster: kept from an earlier PostgresCluster of the name.
func (obs *observation) setClaims(pg *v1alpha1.PostgresCluster, claims map[string]*corev1.PersistentVolumeClaim) {
	obs.claims = claims
	for i, m := range obs.members {
		if claim := claims[m.name]; claim != nil && claim.CreationTimestamp.Before(&pg.CreationTimestamp) {
			obs.members[i].keptData = true
		}
	}
}

// keptBeyond are the cluster's claims beyond spec.instances that are older
// than the cluster: kept from an earlier PostgresCluster of the name. Read
// only before the cluster's first primary, which they may hold the data of.
func keptBeyond(pg *v1alpha1.PostgresCluster, claims map[string]*corev1.PersistentVolumeClaim) []string {
	if pg.Status.CurrentPrimary != "" || pg.Status.TargetPrimary != "" {
		return nil
	}
	var names []string
	for _, claim := range claims {
		if pgspec.Ordinal(pg.Name, claim.Name) > int(pg.Spec.Instances) && claim.CreationTimestamp.Before(&pg.CreationTimestamp) {
			names = append(names, claim.Name)
		}
	}
	slices.Sort(names)
	return names
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

// controlledBy tells whether pg is obj's controller.
func controlledBy(obj client.Object, pg *v1alpha1.PostgresCluster) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID == pg.UID
		}
	}
	return false
}
