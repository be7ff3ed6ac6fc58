package deploy_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
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
	e.createNamespaces(t, ns)
	e.grantJane(t, ns, "storage", rbacv1.PolicyRule{APIGroups: []string{"", "batch", "snapshot.storage.k8s.io"},
		Resources: []string{"persistentvolumeclaims", "configmaps", "jobs", "volumesnapshots"}, Verbs: []string{"get", "create", "update", "patch"}})

	forged := backupClaim(ns, func(c *corev1.PersistentVolumeClaim) { c.Name = "nightly-1700000060" })
	waitInForce(t, "platform-operator-reserved-marks", func() error { return e.user.Create(ctx, forged.DeepCopy(), client.DryRunAll) })

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
		"a Job labelled as a run's":                                   create(job),
		"a ConfigMap dressed as the record of an object-store backup": create(backupRecord(ns, func(c *corev1.ConfigMap) { c.Name = "nightly-1700000300" })),
		"a backup's result changed":                                   patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels["example.com/result"] = "Failed" }),
		"a backup's result removed":                                   patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { delete(c.Labels, "example.com/result") }),
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
		expectForbidden(t, attempt(ctx, e.user), name, "platform-operator-reserved-marks", "rule reserved-marks")
	}

	allowed := map[string]func(context.Context, client.Client) error{
		"a backup pinned":                  patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels[tenantv1.PinnedLabel] = "true" }),
		"a backup handed over":             patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Annotations["example.com/backupjob-uid"] = "other-uid" }),
		"a backup labelled with her label": patchClaim(backup, func(c *corev1.PersistentVolumeClaim) { c.Labels["team"] = "shop" }),
		"her claim relabelled":             patchClaim(mine, func(c *corev1.PersistentVolumeClaim) { c.Labels["team"] = "web" }),
		"her claim pinned":                 patchClaim(mine, func(c *corev1.PersistentVolumeClaim) { c.Labels[tenantv1.PinnedLabel] = "true" }),
		"a snapshot of her own":            create(snapshot(map[string]string{"team": "shop"})),
		"a ConfigMap of her own":           create(&corev1.ConfigMap{ObjectMeta: meta(ns, "settings", map[string]string{"team": "shop"})}),
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

// A user who may create PostgresClusters but not read a Secret cannot name
// it as the application owner's (spec.bootstrap.initdb.secretName): the
// instances, which run the image she names, would read it with their
// token (base/reserved_marks_policy.yaml, rule user-secrets). Once she may
// get that Secret she may name it; a cluster naming none, and the
// operator's drills, pass.
func TestPostgresClusterNamesOnlySecretsItsAuthorMayRead(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "shop"
	e.install(t, "components/postgrescluster/crd.yaml")
	e.createNamespaces(t, ns)
	g.Expect(e.admin.Create(ctx, &corev1.Secret{ObjectMeta: meta(ns, "payroll", nil),
		StringData: map[string]string{"username": "app", "password": "s3cret"}})).To(Succeed())
	bind := func(name string, rules ...rbacv1.PolicyRule) { e.grantJane(t, ns, name, rules...) }
	bind("databases", rbacv1.PolicyRule{APIGroups: []string{tenantv1.GroupVersion.Group}, Resources: []string{"postgresclusters"},
		Verbs: []string{"get", "create", "update", "patch"}})

	naming := func(name, secret string) *unstructured.Unstructured {
		pg := &unstructured.Unstructured{}
		pg.SetAPIVersion(tenantv1.GroupVersion.String())
		pg.SetKind("PostgresCluster")
		pg.SetNamespace(ns)
		pg.SetName(name)
		_ = unstructured.SetNestedField(pg.Object, "1Gi", "spec", "storage", "size")
		if secret != "" {
			_ = unstructured.SetNestedField(pg.Object, secret, "spec", "bootstrap", "initdb", "secretName")
		}
		return pg
	}
	refused := func(err error, what string) {
		t.Helper()
		expectForbidden(t, err, what, "platform-operator-postgrescluster-secrets", "rule user-secrets: spec.bootstrap.initdb.secretName names Secret payroll")
	}

	// The CRD is served, and the policy in force, a moment after their
	// creation.
	waitInForce(t, "platform-operator-postgrescluster-secrets", func() error {
		return e.user.Create(ctx, naming("db", "payroll"), client.DryRunAll)
	})
	refused(e.user.Create(ctx, naming("db", "payroll"), client.DryRunAll), "created naming a Secret she may not read")
	g.Expect(e.user.Create(ctx, naming("db", ""), client.DryRunAll)).To(Succeed(), "a cluster with the Secret the operator generates")

	// Bootstrap cannot change once the cluster exists, nor be added (the
	// CRD refuses it): a cluster comes to name a Secret only as it is
	// created.
	plain := naming("plain", "")
	g.Expect(e.user.Create(ctx, plain)).To(Succeed())
	changed := plain.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "payroll", "spec", "bootstrap", "initdb", "secretName")
	err := e.user.Update(ctx, changed, client.DryRunAll)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "bootstrap added: want 422 Invalid, got %v", err)

	// Nor may she run an image of hers in a cluster that names it.
	named := naming("named", "payroll")
	g.Expect(e.admin.Create(ctx, named)).To(Succeed())
	g.Expect(e.user.Get(ctx, client.ObjectKeyFromObject(named), named)).To(Succeed())
	otherImage := named.DeepCopy()
	_ = unstructured.SetNestedField(otherImage.Object, "registry.example/mine:1", "spec", "image")
	refused(e.user.Update(ctx, otherImage, client.DryRunAll), "the image changed of a cluster naming a Secret she may not read")
	relabelled := named.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "payments"})
	g.Expect(e.user.Update(ctx, relabelled, client.DryRunAll)).To(Succeed(), "another change of that cluster")

	// The operator's drill: restored from a backup, naming no Secret.
	drill := naming("drill-0123456789", "")
	_ = unstructured.SetNestedMap(drill.Object, map[string]any{"fromBackup": map[string]any{"backupJob": "nightly", "name": "nightly-1"}}, "spec", "bootstrap")
	_ = unstructured.SetNestedField(drill.Object, "Delete", "spec", "deletionPolicy")
	drill.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "platform-operator", "example.com/backupjob": "nightly", "example.com/drill": "nightly-1"})
	drill.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "example.com/v1alpha1", Kind: "BackupJob", Name: "nightly",
		UID: "11111111-2222-3333-4444-555555555555", Controller: ptr.To(true)}})
	g.Expect(e.operator.Create(ctx, drill, client.DryRunAll)).To(Succeed(), "the operator's drill")
	// The drill of an object-store backup names its source's store
	// Secret, which the operator may read (it reads the clusters').
	storeDrill := drill.DeepCopy()
	_ = unstructured.SetNestedMap(storeDrill.Object, map[string]any{"fromBackup": map[string]any{"name": "nightly-1", "objectStore": map[string]any{
		"endpoint": "http://10.201.1.1:8333", "bucket": "wal", "path": "shop/db", "credentialsSecret": "s3-keys"}}}, "spec", "bootstrap")
	g.Expect(e.operator.Create(ctx, storeDrill, client.DryRunAll)).To(Succeed(), "the operator's drill of an object-store backup")

	// Restoring a backup is making claims from it: only for whoever may
	// create claims in the namespace.
	restored := drill.DeepCopy()
	restored.SetName("restored")
	restored.SetLabels(nil)
	restored.SetOwnerReferences(nil)
	expectForbidden(t, e.user.Create(ctx, restored, client.DryRunAll), "restored by a user who may not create claims",
		"rule user-backups: spec.bootstrap.fromBackup.backupJob restores a backup of BackupJob nightly")
	bind("claims", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"create"}})
	g.Eventually(func() error {
		return e.user.Create(ctx, restored, client.DryRunAll)
	}).WithTimeout(10*time.Second).Should(Succeed(), "she may create claims: she may restore")

	// Adopting the claims an earlier cluster of the name kept is taking
	// their data: only for whoever may update claims in the namespace.
	adopting := naming("adopting", "")
	adopting.SetAnnotations(map[string]string{"example.com/adopt-kept-claims": "adopting"})
	expectForbidden(t, e.user.Create(ctx, adopting, client.DryRunAll), "adopting kept claims without the right to update claims",
		"rule kept-claims: annotation example.com/adopt-kept-claims takes the claims an earlier PostgresCluster adopting kept")
	g.Expect(e.user.Update(ctx, func() *unstructured.Unstructured {
		u := plain.DeepCopy()
		u.SetAnnotations(map[string]string{"example.com/adopt-kept-claims": "plain"})
		return u
	}(), client.DryRunAll)).To(MatchError(ContainSubstring("rule kept-claims")), "the annotation added to a cluster")
	bind("claims-update", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"update"}})
	g.Eventually(func() error {
		return e.user.Create(ctx, adopting, client.DryRunAll)
	}).WithTimeout(10*time.Second).Should(Succeed(), "she may update claims: she may adopt them")

	bind("payroll-reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
		ResourceNames: []string{"payroll"}, Verbs: []string{"get"}})
	g.Eventually(func() error {
		return e.user.Create(ctx, naming("db", "payroll"), client.DryRunAll)
	}).WithTimeout(10*time.Second).Should(Succeed(), "she may read it: she may name it")
	g.Expect(e.user.Create(ctx, naming("db", "bound"), client.DryRunAll)).To(MatchError(ContainSubstring("rule user-secrets")),
		"another Secret still")

	// The keys of an object store reach the instances too: archiving to a
	// store, or restoring from one, with a Secret she may not read is
	// refused; with one she may, taken; a change of the image of a
	// cluster that names one she may not read, refused.
	store := func(name, field, secret string) *unstructured.Unstructured {
		pg := naming(name, "")
		spec := map[string]any{"endpoint": "https://s3.example.com", "bucket": "wal", "path": "shop/db", "credentialsSecret": secret}
		if field == "backup" {
			_ = unstructured.SetNestedMap(pg.Object, map[string]any{"objectStore": spec}, "spec", "backup")
		} else {
			_ = unstructured.SetNestedMap(pg.Object, map[string]any{"fromBackup": map[string]any{"objectStore": spec}}, "spec", "bootstrap")
		}
		return pg
	}
	for _, field := range []string{"backup", "fromBackup"} {
		expectForbidden(t, e.user.Create(ctx, store("archived", field, "s3-keys"), client.DryRunAll), field+" with a Secret she may not read",
			"rule store-secrets: the object stores' credentialsSecret and caSecret name the Secrets s3-keys, and jane may not get every one")
		g.Expect(e.user.Create(ctx, store("archived", field, "payroll"), client.DryRunAll)).To(Succeed(), "%s with a Secret she may read", field)
	}
	archived := store("archived", "backup", "s3-keys")
	g.Expect(e.admin.Create(ctx, archived)).To(Succeed())
	g.Expect(e.user.Get(ctx, client.ObjectKeyFromObject(archived), archived)).To(Succeed())
	relabelled = archived.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "payments"})
	g.Expect(e.user.Update(ctx, relabelled, client.DryRunAll)).To(Succeed(), "another change of a cluster naming a store Secret she may not read")
	otherImage = archived.DeepCopy()
	_ = unstructured.SetNestedField(otherImage.Object, "registry.example/mine:1", "spec", "image")
	g.Expect(e.user.Update(ctx, otherImage, client.DryRunAll)).To(MatchError(ContainSubstring("rule store-secrets")),
		"the image changed of a cluster naming a store Secret she may not read")

	// A server certificate she brings: its key reaches the instances.
	serving := func(name, secret string) *unstructured.Unstructured {
		pg := naming(name, "")
		_ = unstructured.SetNestedField(pg.Object, secret, "spec", "tls", "serverCertSecret")
		return pg
	}
	expectForbidden(t, e.user.Create(ctx, serving("served", "web-tls"), client.DryRunAll), "a certificate Secret she may not read",
		"rule tls-secrets: spec.tls.serverCertSecret names Secret web-tls, which jane may not get")
	g.Expect(e.user.Create(ctx, serving("served", "payroll"), client.DryRunAll)).To(Succeed(), "a certificate Secret she may read")
	served := serving("served", "web-tls")
	g.Expect(e.admin.Create(ctx, served)).To(Succeed())
	g.Expect(e.user.Get(ctx, client.ObjectKeyFromObject(served), served)).To(Succeed())
	relabelled = served.DeepCopy()
	relabelled.SetLabels(map[string]string{"team": "payments"})
	g.Expect(e.user.Update(ctx, relabelled, client.DryRunAll)).To(Succeed(), "another change of a cluster serving a Secret she may not read")
	for what, change := range map[string]func(*unstructured.Unstructured){
		"its image changed": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "registry.example/mine:1", "spec", "image")
		},
		"another Secret named": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "db-superuser", "spec", "tls", "serverCertSecret")
		},
	} {
		changed := served.DeepCopy()
		change(changed)
		expectForbidden(t, e.user.Update(ctx, changed, client.DryRunAll), what+", of a cluster serving a Secret she may not read", "rule tls-secrets")
	}
}

// The token of a PostgresCluster's instance, bound to its pod db-3, may
// write its report on that pod and nothing else: not another pod its Role
// names (here one of another application, named like the cluster's), nor
// its own pod's spec (base/reserved_marks_policy.yaml, rule own-pod).
func TestInstanceManagersChangeOnlyTheirOwnPod(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "shop"
	e.createNamespaces(t, ns)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: meta(ns, name, labels),
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "postgres:15"}}}}
	}
	g.Expect(e.admin.Create(ctx, pod("db-3", map[string]string{tenantv1.PostgresClusterLabel: "db"}))).To(Succeed())
	g.Expect(e.admin.Create(ctx, pod("db-1", map[string]string{"app": "another"}))).To(Succeed())
	g.Expect(e.admin.Create(ctx, &rbacv1.Role{ObjectMeta: meta(ns, "db-instance", nil), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"db-1", "db-2", "db-3"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"db-primary"}, Verbs: []string{"get", "update"}},
	}})).To(Succeed())
	lease := &coordinationv1.Lease{ObjectMeta: meta(ns, "db-primary", nil), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("db-1")}}
	g.Expect(e.admin.Create(ctx, lease)).To(Succeed())
	g.Expect(e.admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta(ns, "db-instance", nil),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "db-instance"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "db-instance", Namespace: ns}},
	})).To(Succeed())
	instance := e.as(rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":db-instance",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/pod-name": {"db-3"}},
	})
	annotate := func(name string) error {
		patch := []byte(`{"metadata":{"annotations":{"example.com/instance-report":"{}"}}}`)
		return instance.Patch(ctx, &corev1.Pod{ObjectMeta: meta(ns, name, nil)}, client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
	}
	refused := func(err error, what string) {
		t.Helper()
		expectForbidden(t, err, what, "rule own-pod")
	}

	waitInForce(t, "platform-operator-instance-managers", func() error { return annotate("db-1") })
	refused(annotate("db-1"), "another application's pod its Role names")
	g.Expect(annotate("db-3")).To(Succeed(), "its report on its own pod")
	image := []byte(`{"spec":{"containers":[{"name":"c","image":"registry.example/mine:1"}]}}`)
	refused(instance.Patch(ctx, &corev1.Pod{ObjectMeta: meta(ns, "db-3", nil)}, client.RawPatch(types.StrategicMergePatchType, image), client.DryRunAll),
		"its own pod's image")
	// Of the primary's Lease, held by db-1, it may take the hold for
	// itself (whether db-1's has lapsed is the instance manager's to
	// check: a policy knows no time), but neither hand it to another nor
	// release db-1's; its own hold it may release.
	holder := func(from *coordinationv1.Lease, name string) error {
		changed := from.DeepCopy()
		changed.Spec.HolderIdentity = ptr.To(name)
		if name == "" {
			changed.Spec.HolderIdentity = nil
		}
		return instance.Update(ctx, changed, client.DryRunAll)
	}
	refusedLease := func(err error, what string) {
		t.Helper()
		expectForbidden(t, err, what, "rule own-lease")
	}
	refusedLease(holder(lease, "db-2"), "the primary's lease handed to another instance")
	refusedLease(holder(lease, ""), "the primary's lease released from under it")
	g.Expect(holder(lease, "db-3")).To(Succeed(), "the lease taken for itself")
	lease.Spec.HolderIdentity = ptr.To("db-3")
	g.Expect(e.admin.Update(ctx, lease)).To(Succeed())
	g.Expect(holder(lease, "")).To(Succeed(), "its own hold released")
	g.Expect(holder(lease, "db-3")).To(Succeed(), "its own hold renewed")
	refusedLease(holder(lease, "db-1"), "its hold handed to another instance")

	// The same account's token bound to no pod is RBAC's alone.
	unbound := e.as(rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":db-instance",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}})
	patch := []byte(`{"metadata":{"annotations":{"note":"x"}}}`)
	g.Expect(unbound.Patch(ctx, &corev1.Pod{ObjectMeta: meta(ns, "db-1", nil)}, client.RawPatch(types.MergePatchType, patch), client.DryRunAll)).To(Succeed())
}
