package deploy_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

// A user who may write claims, snapshots and Jobs in a namespace cannot
// make one pass for a backup, nor change what a backup says of itself: the
// marks the operator trusts are its own (base/reserved_marks_policy.yaml).
// She may still pin a backup, hand it over to another BackupJob, and label
// her own objects as she likes; the operator and cluster administrators
// are not checked.
func TestReservedMarksAreTheOperators(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "shop"
	g.Expect(e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(e.admin.Create(ctx, &rbacv1.Role{ObjectMeta: meta(ns, "storage", nil), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "batch", "snapshot.storage.k8s.io"}, Resources: []string{"persistentvolumeclaims", "jobs", "volumesnapshots"},
			Verbs: []string{"get", "create", "update", "patch"}},
	}})).To(Succeed())
	g.Expect(e.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta(ns, "jane-storage", nil),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "storage"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}},
	})).To(Succeed())

	forged := backupClaim(ns, func(c *corev1.PersistentVolumeClaim) { c.Name = "nightly-1700000060" })
	g.Eventually(func() error {
		return e.user.Create(ctx, forged.DeepCopy(), client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring("platform-operator-reserved-marks")), "the policy is in force")

	// What the operator made: a backup that succeeded.
	backup := backupClaim(ns, func(c *corev1.PersistentVolumeClaim) { c.Labels["example.com/result"] = "Succeeded" })
	g.Expect(e.operator.Create(ctx, backup)).To(Succeed(), "the operator makes its backups")
	mine := &corev1.PersistentVolumeClaim{ObjectMeta: meta(ns, "data", map[string]string{"team": "shop"}), Spec: backup.Spec}
	g.Expect(e.user.Create(ctx, mine)).To(Succeed(), "a claim of her own")

	snapshot := func(labels map[string]string) *unstructured.Unstructured {
		s := &unstructured.Unstructured{}
		s.SetAPIVersion("snapshot.storage.k8s.io/v1")
		s.SetKind("VolumeSnapshot")
		s.SetNamespace(ns)
		s.SetName("nightly-1700000120")
		s.SetLabels(labels)
		_ = unstructured.SetNestedField(s.Object, "data", "spec", "source", "persistentVolumeClaimName")
		return s
	}
	job := backupJob(ns, func(j *batchv1.Job) { j.Name = "nightly-1700000180" })

	refused := map[string]func(context.Context, client.Client) error{
		"a claim labelled and annotated as a run's backup": create(forged.DeepCopy()),
		"a claim annotated as a BackupJob's": create(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x",
			Annotations: map[string]string{"example.com/backupjob-uid": "bj-uid"}}, Spec: backup.Spec}),
		"a claim labelled as a PostgresCluster's": create(&corev1.PersistentVolumeClaim{ObjectMeta: meta(ns, "db-1",
			map[string]string{tenantv1.PostgresClusterLabel: "db"}), Spec: backup.Spec}),
		"a snapshot labelled as a successful backup": create(snapshot(map[string]string{tenantv1.BackupJobLabel: "nightly",
			"example.com/run": "nightly-1700000120", "example.com/result": "Succeeded"})),
		"a Job labelled as a run's": create(job),
		"a backup's result changed": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels["example.com/result"] = "Failed" }),
		"a backup's result removed": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { delete(c.Labels, "example.com/result") }),
		"a backup's scheduled time changed": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) {
			c.Annotations["example.com/scheduled-time"] = "2020-01-01T00:00:00Z"
		}),
		"a backup marked verified": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Annotations["example.com/verified"] = "Passed" }),
		"her claim labelled as a run's": patchClaim(mine, func(c *corev1.PersistentVolumeClaim) {
			c.Labels[tenantv1.BackupJobLabel], c.Labels["example.com/run"] = "nightly", "nightly-1700000240"
		}),
		"her claim handed to a BackupJob": patchClaim(mine, func(c *corev1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{"example.com/backupjob-uid": "bj-uid"}
		}),
	}
	for name, attempt := range refused {
		err := attempt(ctx, e.user)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: refused, not %v", name, err)
		g.Expect(err).To(MatchError(ContainSubstring("rule reserved-marks")), name)
	}

	allowed := map[string]func(context.Context, client.Client) error{
		"a backup pinned":                  patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels[tenantv1.PinnedLabel] = "true" }),
		"a backup handed over":             patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Annotations["example.com/backupjob-uid"] = "other-uid" }),
		"a backup labelled with her label": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels["team"] = "shop" }),
		"her claim relabelled":             patchClaim(mine, func(c *corev1.PersistentVolumeClaim) { c.Labels["team"] = "web" }),
		"her claim pinned":                 patchClaim(mine, func(c *corev1.PersistentVolumeClaim) { c.Labels[tenantv1.PinnedLabel] = "true" }),
		"a snapshot of her own":            create(snapshot(map[string]string{"team": "shop"})),
	}
	for name, attempt := range allowed {
		g.Expect(attempt(ctx, e.user)).To(Succeed(), name)
	}
	for name, attempt := range map[string]func(context.Context, client.Client) error{
		"the operator records a result":      patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Annotations["example.com/verified"] = "Passed" }),
		"an administrator restores a backup": create(forged.DeepCopy()),
	} {
		c := e.operator
		if name == "an administrator restores a backup" {
			c = e.admin
		}
		g.Expect(attempt(ctx, c)).To(Succeed(), name)
	}
}

// patchClaim dry-runs a merge patch of claim's current state, changed by
// change.
func patchClaim(claim *corev1.PersistentVolumeClaim, change func(*corev1.PersistentVolumeClaim)) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		current := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), current); err != nil {
			return err
		}
		changed := current.DeepCopy()
		if changed.Labels == nil {
			changed.Labels = map[string]string{}
		}
		if changed.Annotations == nil {
			changed.Annotations = map[string]string{}
		}
		change(changed)
		return c.Patch(ctx, changed, client.MergeFrom(current), client.DryRunAll)
	}
}
