package deploy_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/postgrescluster"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/platform"
)

// With the operator's token alone, a pod is written only as the instance
// of a PostgresCluster, shaped as one (base/admission_policy.yaml), and only
// as its cluster's spec makes it (components/postgrescluster/
// instance_pods_policy.yaml): a pod built
// by hand with a stolen label cannot mount another claim or a Secret, read
// a Secret into its environment, run another image or name another
// cluster's UID. Before these rules the guardrails admitted each of them
// (issue 52, finding 3).
func TestAdmissionPolicyBindsInstancePodsToTheirCluster(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	installed := map[string][]string{}
	var operatorDeployment *unstructured.Unstructured
	for _, obj := range readObjects(t, "install.yaml") {
		installed[obj.GetName()] = append(installed[obj.GetName()], obj.GetKind())
		if obj.GetKind() == "Deployment" && obj.GetName() == platform.Name {
			operatorDeployment = obj
		}
	}
	for _, policy := range []string{"platform-operator-postgres-pods", "platform-operator-instance-init"} {
		g.Expect(installed[policy]).To(ConsistOf("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"), "install.yaml installs %s", policy)
	}
	g.Expect(operatorDeployment).NotTo(BeNil(), "install.yaml installs the operator's Deployment")
	const ns, empty = "shop", "empty"
	e.install(t, "components/postgrescluster/crd.yaml", "components/postgrescluster/instance_pods_policy.yaml")
	e.createNamespaces(t, ns, empty)

	typed := &tenantv1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: tenantv1.PostgresClusterSpec{Instances: 2, Image: "postgres:15.8",
			Storage: tenantv1.PostgresStorage{Size: resource.MustParse("1Gi")},
			Backup: &tenantv1.PostgresBackupSpec{ObjectStore: tenantv1.PostgresObjectStore{
				Endpoint: "https://s3.example", Bucket: "backups", CredentialsSecret: "store-keys"}}}}
	cluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"instances": int64(2), "image": typed.Spec.Image, "storage": map[string]any{"size": "1Gi"},
		"backup": map[string]any{"objectStore": map[string]any{"endpoint": "https://s3.example", "bucket": "backups", "credentialsSecret": "store-keys"}},
	}}}
	cluster.SetAPIVersion("example.com/v1alpha1")
	cluster.SetKind("PostgresCluster")
	cluster.SetNamespace(ns)
	cluster.SetName("db")
	e.createOnceServed(t, cluster)
	typed.UID = cluster.GetUID()
	// The pods run as the cluster's instance account, which must exist.
	g.Expect(e.admin.Apply(ctx, postgrescluster.DesiredAccount(typed), client.FieldOwner("test"))).To(Succeed())

	// The operator's Deployment, as installed: the instance image is its
	// own.
	g.Expect(e.admin.Create(ctx, operatorDeployment)).To(Succeed())
	containers, _, _ := unstructured.NestedSlice(operatorDeployment.Object, "spec", "template", "spec", "containers")
	g.Expect(containers).NotTo(BeEmpty())
	operatorImage, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	opts := postgrescluster.PodOptions{InstanceImage: operatorImage, ClusterDomain: "cluster.local"}
	// pod is the instance db-2 as the operator makes it, changed by
	// change (db-1 is made for real below).
	pod := func(change func(*corev1.Pod)) *corev1.Pod {
		p := postgrescluster.DesiredPod(typed, 2, opts)
		if change != nil {
			change(p)
		}
		return p
	}
	waitInForce(t, "platform-operator-postgres-pods", func() error {
		return e.operator.Create(ctx, pod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" }), client.DryRunAll)
	})

	waitInForce(t, "platform-operator-instance-init", func() error {
		return e.operator.Create(ctx, pod(func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "evil:1" }), client.DryRunAll)
	})

	// The operator's own pod passes, and so does a role label on it.
	own := postgrescluster.DesiredPod(typed, 1, opts)
	g.Expect(e.operator.Create(ctx, pod(nil), client.DryRunAll)).To(Succeed(), "the instance's pod, as the operator makes it")
	g.Expect(e.operator.Create(ctx, own)).To(Succeed(), "the instance's pod, as the operator makes it")
	labelled := own.DeepCopy()
	labelled.Labels[tenantv1.PostgresRoleLabel] = tenantv1.PostgresPrimaryRole
	g.Expect(e.operator.Patch(ctx, labelled, client.MergeFrom(own))).To(Succeed(), "a role label on it")

	refused := func(err error, rule, what string) {
		t.Helper()
		expectForbidden(t, err, what, rule)
	}
	secretVolume := corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-superuser"}}}
	claimVolume := corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "orders"}}}
	stolen := []struct {
		name string
		pod  *corev1.Pod
		rule string
	}{
		{"another claim", pod(func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, claimVolume) }), "rule instance-volumes"},
		{"a Secret volume", pod(func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, secretVolume) }), "rule instance-volumes"},
		{"a Secret in a projected volume", pod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-superuser"}}}}}}})
		}), "rule instance-volumes"},
		{"another Secret in its environment", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, pgspec.SecretEnv("LOOT", "db-superuser", "secretAccessKey"))
		}), "rule instance-secrets"},
		{"another key of its store's Secret", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, pgspec.SecretEnv("LOOT", "store-keys", "password"))
		}), "rule instance-environment"},
		{"a whole Secret as environment", pod(func(p *corev1.Pod) {
			p.Spec.InitContainers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-superuser"}}}}
		}), "rule instance-environment"},
		{"another image", pod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" }), "rule instance-spec-image"},
		{"another init image", pod(func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "evil:1" }), "rule instance-init-image"},
		{"an init container more", pod(func(p *corev1.Pod) {
			extra := p.Spec.InitContainers[0].DeepCopy()
			extra.Name, extra.Image = "extra", "evil:1"
			p.Spec.InitContainers = append(p.Spec.InitContainers, *extra)
		}), "rule instance-init-image"},
		{"another cluster's UID", pod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "11111111-2222-3333-4444-555555555555" }), "rule instance-owner"},
		{"no owner", pod(func(p *corev1.Pod) { p.OwnerReferences = nil }), "rule instance-pods"},
		{"a pod of no cluster", &corev1.Pod{ObjectMeta: meta(ns, "reader", managed(nil)), Spec: func() corev1.PodSpec {
			s := restrictedPod()
			s.Volumes = []corev1.Volume{secretVolume}
			return s
		}()}, "rule instance-pods"},
	}
	for _, s := range stolen {
		refused(e.operator.Create(ctx, s.pod, client.DryRunAll), s.rule, s.name)
	}
	// Where no PostgresCluster is, the guardrails still hold the operator's
	// pods to an instance's shape.
	refused(e.operator.Create(ctx, pod(func(p *corev1.Pod) {
		p.Namespace = empty
		p.Spec.Volumes = append(p.Spec.Volumes, secretVolume)
	}), client.DryRunAll), "rule instance-volumes", "a Secret volume, in a namespace of no PostgresCluster")
	reimaged := own.DeepCopy()
	reimaged.Spec.Containers[0].Image = typed.Spec.Image + "-evil"
	refused(e.operator.Patch(ctx, reimaged, client.MergeFrom(own)), "rule instance-image-in-place", "another image in place")

	// The Deployment that says which image is the operator's is out of its
	// token's reach.
	changedDeployment := operatorDeployment.DeepCopy()
	_ = unstructured.SetNestedSlice(changedDeployment.Object, nil, "spec", "template", "spec", "initContainers")
	g.Expect(unstructured.SetNestedField(changedDeployment.Object, map[string]any{"evil": "1"}, "metadata", "annotations")).To(Succeed())
	expectForbidden(t, e.operator.Update(ctx, changedDeployment, client.DryRunAll), "the operator's Deployment changed with its token", "rule managed-by-label")
	expectForbidden(t, e.operator.Delete(ctx, operatorDeployment, client.DryRunAll), "the operator's Deployment deleted with its token",
		"cannot delete resource \"deployments\"")

	// The policy checks the operator alone: the namespace's own users
	// write their pods as their rights allow, with or without a
	// PostgresCluster in the namespace, labelled or not.
	g.Expect(e.admin.Create(ctx, pod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" }), client.DryRunAll)).
		To(Succeed(), "someone else's pod")
	plain := &corev1.Pod{ObjectMeta: meta(empty, "app", nil), Spec: restrictedPod()}
	plain.Spec.Volumes = nil
	g.Expect(e.admin.Create(ctx, plain, client.DryRunAll)).To(Succeed(), "someone's pod where no PostgresCluster is")
	labelledPlain := plain.DeepCopy()
	labelledPlain.Labels = map[string]string{tenantv1.PostgresClusterLabel: "db"}
	g.Expect(e.admin.Create(ctx, labelledPlain, client.DryRunAll)).To(Succeed(), "someone's pod with the label, where no PostgresCluster is")
}
