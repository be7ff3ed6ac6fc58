package postgrescluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/podsecurity"
)

// ensurePods makes the pods match the spec and the election: a pod for
// each instance that has a claim, none while hibernated, a pod that is over
// (evicted, stopped by a node's shutdown) replaced, none beyond
// spec.instances once it no longer holds the primary, pods of an older spec
// replaced one at a time (replicas first; decide hands the primary over
// before its turn), and the role labels that route CLUSTER-rw and
// CLUSTER-ro.
func (r *Reconciler) ensurePods(ctx context.Context, pg *v1alpha1.PostgresCluster, obs *observation, e election, opts PodOptions, out *outcome) {
	if pg.Spec.Hibernate {
		for _, pod := range obs.pods {
			r.deletePod(ctx, pg, pod, "the cluster hibernates", out)
		}
		return
	}
	// A pod that is over never runs again: nothing restarts a standalone
	// pod. It goes, whatever the instance's role (its PostgreSQL stopped
	// with it), and the next reconcile makes it again on its claim. A
	// running pod never goes here, the primary's least of all.
	over := map[string]bool{}
	for name, pod := range obs.pods {
		if how, ok := podOver(pod); ok && pod.DeletionTimestamp.IsZero() {
			over[name] = true
			if r.removePod(ctx, pod, out) {
				r.Recorder.Eventf(pg, pod, corev1.EventTypeWarning, "InstanceFailed", "Delete",
					"Pod %s stopped for good (%s): replaced; its claim is kept", name, how)
			}
		}
	}
	for n := 1; n <= int(pg.Spec.Instances); n++ {
		name := pgspec.InstanceName(pg.Name, n)
		if obs.pods[name] != nil || obs.claims[name] == nil || out.podsHeld {
			continue
		}
		pod := DesiredPod(pg, n, opts)
		// Every pod the operator makes meets the restricted standard,
		// judged as the API server would, whatever the namespace enforces:
		// spec.resources is the user's part of it.
		if reason := podsecurity.Restricted(r.PodSecurityVersion, &pod.ObjectMeta, &pod.Spec); reason != "" {
			out.Add(fmt.Errorf("pod %s: %s", name, reason), true)
			out.Report(v1alpha1.PostgresInvalidSpecReason, fmt.Sprintf("Pod %s would not meet the restricted Pod Security Standard: %s", name, reason))
			continue
		}
		if err := r.Client.Create(ctx, pod); err != nil {
			if apierrors.IsAlreadyExists(err) {
				out.conflict = true
				out.Report(v1alpha1.PostgresConflictReason, fmt.Sprintf("Pod %s exists and is not PostgresCluster %s's", name, pg.Name))
				continue
			}
			out.Add(fmt.Errorf("create Pod %s: %w", name, err), apierrors.IsInvalid(err))
			out.Report(v1alpha1.PostgresApplyFailedReason, fmt.Sprintf("Pod %s: %v", name, err))
			continue
		}
		children.CountWrite(kind, "Pod", "create")
	}

	holdsPrimary := func(name string) bool { return name == e.current || name == e.target }
	for name, pod := range obs.pods {
		if pgspec.Ordinal(pg.Name, name) > int(pg.Spec.Instances) && !holdsPrimary(name) && !over[name] {
			r.deletePod(ctx, pg, pod, "spec.instances no longer counts it", out)
		}
	}
	if outdated := nextOutdated(pg, obs, e); outdated != nil {
		r.deletePod(ctx, pg, outdated, "it runs an older spec", out)
	}
	r.routePods(ctx, obs, e, out)
}

// nextOutdated is the pod to replace next for an update, or nil: only while
// every instance runs and is ready (a replacement costs one instance at a
// time), replicas first, never the primary (decide hands it over to an
// updated replica first, after which it is a replica).
func nextOutdated(pg *v1alpha1.PostgresCluster, obs *observation, e election) *corev1.Pod {
	if e.current == "" || e.current != e.target || e.primary == "" {
		return nil
	}
	var outdated []string
	for _, m := range obs.members {
		if pgspec.Ordinal(pg.Name, m.name) > int(pg.Spec.Instances) {
			continue
		}
		if !m.exists || (m.name != e.primary && !slices.Contains(e.replicas, m.name)) {
			return nil
		}
		if !m.specCurrent && m.name != e.primary {
			outdated = append(outdated, m.name)
		}
	}
	if len(outdated) == 0 {
		return nil
	}
	return obs.pods[outdated[0]]
}

func (r *Reconciler) deletePod(ctx context.Context, pg *v1alpha1.PostgresCluster, pod *corev1.Pod, why string, out *outcome) {
	if r.removePod(ctx, pod, out) {
		r.Recorder.Eventf(pg, pod, corev1.EventTypeNormal, "InstanceDeleted", "Delete", "Pod %s deleted: %s; its claim is kept", pod.Name, why)
	}
}

// removePod deletes pod, the one that was seen (its UID), unless it is
// being deleted already, and tells whether it did.
func (r *Reconciler) removePod(ctx context.Context, pod *corev1.Pod, out *outcome) bool {
	if !pod.DeletionTimestamp.IsZero() {
		return false
	}
	uid := pod.UID
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		out.Add(fmt.Errorf("delete Pod %s: %w", pod.Name, err), false)
		return false
	}
	children.CountWrite(kind, "Pod", "delete")
	return true
}

// routePods puts the role labels where the election says: role=primary on
// the primary alone, role=replica on the ready replicas, none elsewhere.
// The label goes first from a pod that lost its role, so that CLUSTER-rw
// never selects two pods.
func (r *Reconciler) routePods(ctx context.Context, obs *observation, e election, out *outcome) {
	want := func(name string) string {
		switch {
		case name == e.primary:
			return v1alpha1.PostgresPrimaryRole
		case slices.Contains(e.replicas, name):
			return v1alpha1.PostgresReplicaRole
		}
		return ""
	}
	names := make([]string, 0, len(obs.pods))
	for name := range obs.pods {
		names = append(names, name)
	}
	// Removals before additions.
	slices.SortFunc(names, func(a, b string) int {
		return boolRank(want(a) != "") - boolRank(want(b) != "")
	})
	obs.routed = map[string]bool{}
	for _, name := range names {
		pod := obs.pods[name]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if pod.Labels[v1alpha1.PostgresRoleLabel] == want(name) {
			obs.routed[name] = true
			continue
		}
		var value any
		if role := want(name); role != "" {
			value = role
		}
		// Without a resourceVersion: the instance managers' reports change
		// the pods every second under load, and setting one label needs
		// no lock; a label that the next report makes wrong, the next
		// reconcile puts right.
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels": map[string]any{v1alpha1.PostgresRoleLabel: value},
		}})
		if err != nil {
			out.Add(err, false)
			continue
		}
		target := &corev1.Pod{}
		target.Namespace, target.Name = pod.Namespace, pod.Name
		if err := r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			out.Add(fmt.Errorf("route Pod %s: %w", name, err), false)
			out.Report(v1alpha1.PostgresApplyFailedReason, fmt.Sprintf("Pod %s: its label %s could not be set, so the Services do not route by its role: %v",
				name, v1alpha1.PostgresRoleLabel, err))
			continue
		}
		obs.routed[name] = true
		children.CountWrite(kind, "Pod", "label")
	}
}
