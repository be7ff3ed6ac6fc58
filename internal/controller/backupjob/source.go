package backupjob

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgbackup"
)

// sourceProblem is why no run of bj can start, or nil.
func (o *observation) sourceProblem(bj *v1alpha1.BackupJob, postgresServed bool) *cause {
	src := bj.Spec.Source
	switch {
	case src.PostgresCluster != "" && !postgresServed:
		return &cause{Reason: v1alpha1.BackupJobSourceNotFoundReason,
			Message: "spec.source.postgresCluster: the cluster does not serve the PostgresCluster API (example.com/v1alpha1): install the postgrescluster component, then restart the operator"}
	case src.PostgresCluster != "" && o.postgres.cluster == nil:
		return &cause{Reason: v1alpha1.BackupJobSourceNotFoundReason,
			Message: fmt.Sprintf("spec.source.postgresCluster: PostgresCluster %s not found in namespace %s; runs are skipped and counted as missed until it exists",
				src.PostgresCluster, bj.Namespace)}
	case src.PostgresCluster != "" && objectStoreTarget(bj) != nil && pgbackup.ObjectStoreProblem(o.postgres.cluster) != nil:
		return pgbackup.ObjectStoreProblem(o.postgres.cluster)
	case src.PostgresCluster != "" && snapshotTarget(bj) != nil && o.postgres.cluster.Spec.Instances <= 1 && !src.AllowPrimaryFencing:
		return &cause{Reason: v1alpha1.BackupJobPrimaryFencingRefusedReason,
			Message: fmt.Sprintf("PostgresCluster %s has a single instance, its primary: a cold snapshot would stop its writes while it is taken. "+
				"Add a replica (spec.instances: 2 or more), or set spec.source.allowPrimaryFencing: true to accept that; runs are skipped and the cluster is not touched",
				src.PostgresCluster)}
	case src.PostgresCluster != "":
		return nil
	case o.source == nil:
		return &cause{Reason: v1alpha1.BackupJobSourceNotFoundReason,
			Message: fmt.Sprintf("spec.source.persistentVolumeClaimName: claim %s not found in namespace %s; runs are skipped and counted as missed until it exists",
				src.PersistentVolumeClaimName, bj.Namespace)}
	case o.source.Labels[v1alpha1.PostgresClusterLabel] != "":
		return &cause{Reason: v1alpha1.BackupJobSourceIsPostgresClusterReason,
			Message: fmt.Sprintf("spec.source.persistentVolumeClaimName: claim %s holds the data of PostgresCluster %s: a copy of a running database's files is not a backup. "+
				"Set spec.source.postgresCluster: %s instead (a base backup, or a cold snapshot of a fenced replica); runs are skipped",
				src.PersistentVolumeClaimName, o.source.Labels[v1alpha1.PostgresClusterLabel], o.source.Labels[v1alpha1.PostgresClusterLabel])}
	case snapshotTarget(bj) == nil && slices.Contains(o.source.Spec.AccessModes, corev1.ReadWriteOncePod):
		return &cause{Reason: v1alpha1.BackupJobSourceNotMountableReason,
			Message: fmt.Sprintf("spec.source.persistentVolumeClaimName: claim %s is ReadWriteOncePod: a copy Job's pod can never mount it beside the pod that uses it. "+
				"Set spec.target.snapshot instead; runs are skipped", src.PersistentVolumeClaimName)}
	}
	return nil
}

// nodeOfSource is the node of the pods that use the source claim of a copy
// Job, read from the API server when a run's Job is made (see sourceNode).
func (r *Reconciler) nodeOfSource(ctx context.Context, source *corev1.PersistentVolumeClaim) (string, error) {
	if source == nil || !mountableOnOneNode(source) {
		return "", nil
	}
	pods, err := r.namespacePods.list(ctx, r.APIReader, source.Namespace)
	if err != nil {
		return "", fmt.Errorf("claim %s: %w", source.Name, err)
	}
	return sourceNode(source, pods), nil
}

// mountableOnOneNode tells whether a claim can be mounted on one node at a
// time only: ReadWriteOnce, and no mode that allows more.
func mountableOnOneNode(c *corev1.PersistentVolumeClaim) bool {
	modes := c.Spec.AccessModes
	return slices.Contains(modes, corev1.ReadWriteOnce) &&
		!slices.Contains(modes, corev1.ReadWriteMany) && !slices.Contains(modes, corev1.ReadOnlyMany)
}

// sourceNode is the node on which the running pods that use claim are, ""
// when none runs (the copy may go anywhere) or they are on several nodes
// (the claim is not attached to one; the scheduler decides). A
// ReadWriteOnce volume is attached to one node at a time: a copy Job's pod
// scheduled on another node waits on a Multi-Attach error until its
// deadline, so the Job is pinned to the node that has it.
func sourceNode(claim *corev1.PersistentVolumeClaim, pods []corev1.Pod) string {
	node := ""
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !usesClaim(p, claim.Name) {
			continue
		}
		if node != "" && node != p.Spec.NodeName {
			return ""
		}
		node = p.Spec.NodeName
	}
	return node
}

func usesClaim(p *corev1.Pod, claim string) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
	})
}

// pinToNode adds to a pod spec the requirement to run on node, to each of
// the template's own required node affinity terms (which are alternatives)
// or as the only one. It matches the node's name, not its hostname label,
// which may differ.
func pinToNode(spec *corev1.PodSpec, node string) {
	onNode := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	required := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		required = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	}
	for i := range required.NodeSelectorTerms {
		required.NodeSelectorTerms[i].MatchFields = append(required.NodeSelectorTerms[i].MatchFields, onNode)
	}
}
