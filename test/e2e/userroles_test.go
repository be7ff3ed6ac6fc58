package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// as returns a client that impersonates user.
func as(t *testing.T, user string) client.Client {
	t.Helper()
	config := rest.CopyConfig(shared.Cluster.RESTConfig())
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The built-in roles a namespace's people are given carry the operator's
// kinds, through the ClusterRoles of deploy/components/*/user_roles.yaml
// that they aggregate: view reads Websites and BackupJobs with their status
// but no Secret, edit and admin also create them. Creating a BackupJob is
// creating pods; edit may do both anyway. A cluster-scoped Tenant is given
// to nobody by a namespace's roles.
func TestUserRolesCarryTheOperatorsKinds(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := shared.newNamespace(t, nil)
	for user, role := range map[string]string{"viewer": "view", "editor": "edit", "owner": "admin"} {
		g.Expect(shared.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
	}
	site := websitetest.Website("site", ns)
	g.Expect(shared.Client.Create(ctx, site)).To(Succeed())
	backup := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: v1alpha1.BackupJobSpec{
			Schedule: "@daily", Source: v1alpha1.BackupSource{PersistentVolumeClaimName: "data"},
			JobTemplate: &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36"}},
			}}}},
		},
	}
	newBackup := func(name string) *v1alpha1.BackupJob {
		b := backup.DeepCopy()
		b.Name = name
		return b
	}
	g.Expect(shared.Client.Create(ctx, newBackup("nightly"))).To(Succeed())

	// The aggregation controller fills the built-in roles a moment after
	// the ClusterRoles appear.
	viewer, editor, owner := as(t, "viewer"), as(t, "editor"), as(t, "owner")
	g.Eventually(func(g Gomega) {
		g.Expect(viewer.Get(ctx, client.ObjectKeyFromObject(site), &websitev1.Website{})).To(Succeed())
		g.Expect(viewer.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, &v1alpha1.BackupJob{})).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(viewer.List(ctx, &v1alpha1.BackupJobList{}, client.InNamespace(ns))).To(Succeed())
	g.Expect(viewer.SubResource("status").Get(ctx, newBackup("nightly"), &v1alpha1.BackupJob{})).To(Succeed())
	g.Expect(apierrors.IsForbidden(viewer.Create(ctx, newBackup("by-viewer"), client.DryRunAll))).To(BeTrue(), "view creates no BackupJob")
	g.Expect(apierrors.IsForbidden(viewer.Create(ctx, websitetest.Website("by-viewer", ns), client.DryRunAll))).To(BeTrue(), "view creates no Website")
	g.Expect(apierrors.IsForbidden(viewer.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))).To(BeTrue(), "view reads no Secret")

	for name, c := range map[string]client.Client{"edit": editor, "admin": owner} {
		g.Eventually(func() error { return c.Create(ctx, newBackup("by-"+name), client.DryRunAll) }).
			WithTimeout(30*time.Second).Should(Succeed(), "%s creates BackupJobs", name)
		g.Expect(c.Create(ctx, websitetest.Website("by-"+name, ns), client.DryRunAll)).To(Succeed(), "%s creates Websites", name)
		g.Expect(c.Delete(ctx, newBackup("nightly"), client.DryRunAll)).To(Succeed(), "%s deletes BackupJobs", name)
		status := &v1alpha1.BackupJob{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, status)).To(Succeed())
		status.Status.BackupCount = 99
		g.Expect(apierrors.IsForbidden(c.Status().Update(ctx, status, client.DryRunAll))).To(BeTrue(), "status stays the operator's to write (%s)", name)
		g.Expect(apierrors.IsForbidden(c.Create(ctx, &v1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "by-" + name},
			Spec:       v1alpha1.TenantSpec{Namespaces: []string{"by-" + name}},
		}, client.DryRunAll))).To(BeTrue(), "%s creates no Tenant", name)
	}
}
