package deploy_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// With its token, the operator changes of its own kinds only its
// finalizers, a PostgresCluster's backup fence and a Website's kopf
// annotations (which it removes); it creates and deletes only restore
// drills (base/own_kinds_policy.yaml). A stolen token cannot change a
// cluster's image, nor create a cluster that restores a backup as it
// likes.
func TestAdmissionPolicyHoldsTheOperatorToItsOwnKinds(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "shop"
	e.install(t, "components/postgrescluster/crd.yaml", "components/website/crd.yaml")
	e.createNamespaces(t, ns)

	object := func(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	cluster := func(name string) *unstructured.Unstructured {
		return object("example.com/v1alpha1", "PostgresCluster", name, map[string]any{"storage": map[string]any{"size": "1Gi"}})
	}
	drill := func(mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := object("example.com/v1alpha1", "PostgresCluster", "drill-0123456789", map[string]any{
			"instances": int64(1), "deletionPolicy": "Delete", "storage": map[string]any{"size": "1Gi"},
			"bootstrap": map[string]any{"fromBackup": map[string]any{"backupJob": "nightly", "name": "nightly-1"}}})
		u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "platform-operator", "example.com/backupjob": "nightly", "example.com/drill": "nightly-1"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "example.com/v1alpha1", Kind: "BackupJob", Name: "nightly",
			UID: "11111111-2222-3333-4444-555555555555", Controller: ptr.To(true)}})
		if mutate != nil {
			mutate(u)
		}
		return u
	}
	refused := func(err error, rule, what string) {
		t.Helper()
		expectForbidden(t, err, what, "platform-operator-own-kinds", "rule "+rule)
	}

	db := cluster("db")
	e.createOnceServed(t, db)
	waitInForce(t, "platform-operator-own-kinds", func() error { return e.operator.Delete(ctx, db, client.DryRunAll) })

	change := func(u *unstructured.Unstructured, mutate func(*unstructured.Unstructured)) error {
		changed := u.DeepCopy()
		mutate(changed)
		return e.operator.Patch(ctx, changed, client.MergeFrom(u), client.DryRunAll)
	}
	refused(change(db, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "registry.example/mine:1", "spec", "image")
	}), "own-kinds-updates", "the image of a cluster")
	refused(change(db, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "x"}) }), "own-kinds-updates", "its labels")
	refused(change(db, func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"example.com/failover-without-quorum": "db-1"})
	}), "own-kinds-updates", "another annotation")
	g.Expect(change(db, func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"example.com/postgrescluster-claims"}) })).
		To(Succeed(), "its finalizer")
	g.Expect(change(db, func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"example.com/backup-fence": "db-2", "example.com/backup-fence-by": "nightly-1"})
	})).To(Succeed(), "a backup fence")

	site := object("example.com/v1", "Website", "site", map[string]any{"image": "nginx:1.25", "replicas": int64(1)})
	site.SetAnnotations(map[string]string{"kopf.zalando.org/last-handled-configuration": "{}", "team": "web"})
	e.createOnceServed(t, site)
	g.Expect(change(site, func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"team": "web"}) })).
		To(Succeed(), "kopf's annotations removed from a Website")
	refused(change(site, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "registry.example/mine:1", "spec", "image")
	}), "own-kinds-updates", "the image of a Website")
	refused(change(site, func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{}) }), "own-kinds-updates", "a Website's own annotation removed")

	refused(e.operator.Create(ctx, cluster("other"), client.DryRunAll), "own-kinds-creates", "a cluster of its choosing")
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "superuserAccess")
	}), client.DryRunAll), "own-kinds-creates", "a drill with superuser access")
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "weekly", "spec", "bootstrap", "fromBackup", "backupJob")
	}), client.DryRunAll), "own-kinds-creates", "a drill of another BackupJob's backup")
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) { u.SetOwnerReferences(nil) }), client.DryRunAll),
		"own-kinds-creates", "a drill no BackupJob controls")
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "nightly-2", "spec", "bootstrap", "fromBackup", "name")
	}), client.DryRunAll), "own-kinds-creates", "a drill of another backup than its label names")
	fromStore := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"name": "nightly-1", "objectStore": map[string]any{
			"endpoint": "http://10.201.1.1:8333", "bucket": "wal", "path": "shop/db", "credentialsSecret": "s3-keys"}},
			"spec", "bootstrap", "fromBackup")
	}
	g.Expect(e.operator.Create(ctx, drill(fromStore), client.DryRunAll)).To(Succeed(), "a restore drill of an object-store backup")
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		fromStore(u)
		_ = unstructured.SetNestedField(u.Object, "nightly-2", "spec", "bootstrap", "fromBackup", "name")
	}), client.DryRunAll), "own-kinds-creates", "an object-store drill of another backup than its label names")
	g.Expect(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		fromStore(u)
		_ = unstructured.SetNestedField(u.Object, "2026-12-07T14:02:00Z", "spec", "bootstrap", "fromBackup", "targetTime")
	}), client.DryRunAll)).To(Succeed(), "a restore drill of an object-store backup at its end (verify.recoveryTarget BackupEnd)")
	for _, target := range [][2]string{{"targetLSN", "0/3000000"}, {"targetName", "before-upgrade"}} {
		refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
			fromStore(u)
			_ = unstructured.SetNestedField(u.Object, target[1], "spec", "bootstrap", "fromBackup", target[0])
		}), client.DryRunAll), "own-kinds-creates", "an object-store drill with a "+target[0])
	}
	refused(e.operator.Create(ctx, drill(func(u *unstructured.Unstructured) {
		fromStore(u)
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"objectStore": map[string]any{
			"endpoint": "http://10.201.1.1:8333", "bucket": "wal", "credentialsSecret": "s3-keys"}}, "spec", "backup")
	}), client.DryRunAll), "own-kinds-creates", "an object-store drill that archives")
	d := drill(nil)
	g.Expect(e.operator.Create(ctx, d)).To(Succeed(), "a restore drill")
	g.Expect(e.operator.Delete(ctx, d, client.DryRunAll)).To(Succeed(), "a restore drill deleted")
	refused(e.operator.Delete(ctx, db, client.DryRunAll), "own-kinds-deletes", "a user's cluster deleted")
}
