package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	websitev1 "example.com/platform-operator/api/v1"
	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/postgrescluster"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/platform"
)

// policyEnv is an API server with the operator's generated roles bound to
// its ServiceAccount and the admission policies of base/ in force, and
// clients as the administrator, as the operator and as an ordinary user.
type policyEnv struct {
	admin, operator client.Client
	// user is jane, an ordinary user: her rights are a test's to grant.
	user client.Client
	// as makes a client of another identity, by impersonation.
	as func(rest.ImpersonationConfig) client.Client
}

// startPolicyEnv starts kube-apiserver (envtest, with RBAC and
// ServiceAccount tokens) with the VolumeSnapshot CRDs, and installs what
// deploy/ grants the operator and the policy that confines it.
func startPolicyEnv(t *testing.T) *policyEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an API server (envtest)")
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with make test, which builds the control plane")
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join("..", "internal", "localcluster", "simulation_crds")},
			ErrorIfPathMissing: true,
		},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: platform.Namespace}}); err != nil {
		t.Fatal(err)
	}
	files := []string{"base/role.yaml", "base/role_binding.yaml", "base/admission_policy.yaml", "base/reserved_marks_policy.yaml", "base/own_kinds_policy.yaml"}
	components, err := filepath.Glob("components/*/role.yaml")
	if err != nil || len(components) == 0 {
		t.Fatalf("no component's role in components/: %v", err)
	}
	for _, role := range components {
		files = append(files, role, filepath.Join(filepath.Dir(role), "role_binding.yaml"))
	}
	for _, file := range files {
		for _, obj := range readObjects(t, file) {
			if err := admin.Create(ctx, obj); err != nil {
				t.Fatalf("%s: create %s %s: %v", file, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + platform.Namespace + ":" + platform.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + platform.Namespace, "system:authenticated"},
	}
	operator, err := client.New(as, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	jane := rest.CopyConfig(cfg)
	jane.Impersonate = rest.ImpersonationConfig{UserName: "jane", Groups: []string{"system:authenticated"}}
	user, err := client.New(jane, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	impersonating := func(who rest.ImpersonationConfig) client.Client {
		config := rest.CopyConfig(cfg)
		config.Impersonate = who
		c, err := client.New(config, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return &policyEnv{admin: admin, operator: operator, user: user, as: impersonating}
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objects
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// Names the test uses.
const (
	heldNS     = "team-a" // held by Tenant team-a
	otherNS    = "team-b" // held by Tenant team-b
	plainNS    = "plain"  // no Tenant's
	adoptNS    = "legacy" // labelled for adoption by team-a
	tenantName = "team-a"
)

func managed(extra map[string]string) map[string]string {
	labels := map[string]string{platform.ManagedByLabel: platform.Name}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

func tenantLabels(name string) map[string]string {
	return managed(map[string]string{tenantv1.TenantLabel: name})
}

func meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

// restrictedPod is a pod spec as the operator writes them.
func restrictedPod() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}},
		Volumes: []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "nightly-1700000000"},
		}}},
	}
}

// backupJob is a run's Job of the BackupJob nightly in ns, as the operator
// makes it, changed by change.
func backupJob(ns string, changes ...func(*batchv1.Job)) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: meta(ns, "nightly-1700000000", managed(map[string]string{tenantv1.BackupJobLabel: "nightly", "example.com/run": "nightly-1700000000"})),
		Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: restrictedPod()}},
	}
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: tenantv1.GroupVersion.String(), Kind: "BackupJob", Name: "nightly",
		UID: "bj-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	for _, change := range changes {
		change(job)
	}
	return job
}

func withPod(change func(*corev1.PodSpec)) func(*batchv1.Job) {
	return func(j *batchv1.Job) { change(&j.Spec.Template.Spec) }
}

func withContainer(change func(*corev1.Container)) func(*batchv1.Job) {
	return withPod(func(p *corev1.PodSpec) { change(&p.Containers[0]) })
}

func backupClaim(ns string, change func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta(ns, "nightly-1700000000", managed(map[string]string{tenantv1.BackupJobLabel: "nightly", "example.com/run": "nightly-1700000000"})),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	claim.Annotations = map[string]string{"example.com/backupjob-uid": "bj-uid"}
	if change != nil {
		change(claim)
	}
	return claim
}

// backupRecord is the record of a backup in an object store, as a run of
// BackupJob nightly makes it, changed by change.
func backupRecord(ns string, change func(*corev1.ConfigMap)) *corev1.ConfigMap {
	record := &corev1.ConfigMap{ObjectMeta: meta(ns, "nightly-1700000000",
		managed(map[string]string{tenantv1.BackupJobLabel: "nightly", "example.com/run": "nightly-1700000000"}))}
	record.Annotations = map[string]string{"example.com/backupjob-uid": "bj-uid"}
	if change != nil {
		change(record)
	}
	return record
}

func tokenRequest(boundTo *corev1.Secret, seconds int64) *authenticationv1.TokenRequest {
	r := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(seconds)}}
	if boundTo != nil {
		r.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: boundTo.Name, UID: boundTo.UID}
	}
	return r
}

// The admission policy of base/ confines each right the operator's roles
// grant to where the operator uses it. Each case is made as the operator's
// ServiceAccount, which the generated roles allow, so that any refusal is
// the policy's, and names its rule; what the operator does for a legitimate
// Tenant, Website or BackupJob is allowed.
func TestAdmissionPolicyConfinesEveryRightOfTheOperator(t *testing.T) {
	e := startPolicyEnv(t)
	g := NewWithT(t)
	ctx := t.Context()
	for name, labels := range map[string]map[string]string{
		heldNS:  tenantLabels(tenantName),
		otherNS: tenantLabels("team-b"),
		plainNS: nil,
		adoptNS: {tenantv1.TenantAdoptLabel: tenantName},
	} {
		g.Expect(e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})).To(Succeed())
	}
	// Objects a person made, for the operator to try its rights on.
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta("kube-system", "admin", nil)},
		&corev1.ServiceAccount{ObjectMeta: meta(plainNS, "deployer", nil)},
		&corev1.Secret{ObjectMeta: meta("kube-system", "bound", nil)},
		&corev1.Secret{ObjectMeta: meta(plainNS, "bound", nil)},
		&corev1.Secret{ObjectMeta: meta(heldNS, "bound", nil)},
		&corev1.ServiceAccount{ObjectMeta: meta(heldNS, "default", nil)},
		&corev1.ServiceAccount{ObjectMeta: meta(heldNS, "robot", tenantLabels(tenantName))},
		// A Role of rights the operator holds, which RBAC lets it bind.
		&rbacv1.Role{ObjectMeta: meta(heldNS, "reader", nil), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
		}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta(plainNS, "database", nil), Spec: backupClaim(plainNS, nil).Spec},
		// A PostgresCluster's instance account, as the operator labels it.
		&corev1.ServiceAccount{ObjectMeta: meta(plainNS, "db-instance", managed(map[string]string{tenantv1.PostgresClusterLabel: "db"}))},
	} {
		g.Expect(e.admin.Create(ctx, obj)).To(Succeed())
	}

	waitInForce(t, "platform-operator-guardrails", func() error {
		return e.operator.Create(ctx, &corev1.Service{ObjectMeta: meta(plainNS, "probe", nil),
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, client.DryRunAll)
	})

	t.Run("the operator's own work", func(t *testing.T) { testOperatorsWorkIsAllowed(t, e) })
	t.Run("stolen token", func(t *testing.T) { testStolenTokenIsConfined(t, e) })
}

func testOperatorsWorkIsAllowed(t *testing.T, e *policyEnv) {
	g := NewWithT(t)
	ctx := t.Context()
	apply := func(obj runtime.ApplyConfiguration) error {
		return e.operator.Apply(ctx, obj, client.FieldOwner(platform.Name), client.ForceOwnership, client.DryRunAll)
	}
	tn := &tenantv1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenantName, UID: "tenant-uid"}, Spec: tenantv1.TenantSpec{
		Namespaces:     []string{heldNS, "team-a-new"},
		Owners:         []tenantv1.TenantSubject{{Kind: tenantv1.UserSubject, Name: "alice@example.com"}},
		ServiceAccount: &tenantv1.TenantServiceAccount{Name: "ci"},
		Quota:          &tenantv1.TenantQuota{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}, TenantContainerDefaults: &tenantv1.TenantContainerDefaults{Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
		Isolation:      tenantv1.SameTenantIsolation,
	}}
	g.Expect(apply(tenant.DesiredNamespace(tn, "team-a-new"))).To(Succeed(), "a Tenant's new namespace")
	for _, ac := range []runtime.ApplyConfiguration{
		tenant.DesiredRoleBinding(tn, heldNS, true), tenant.DesiredResourceQuota(tn, heldNS), tenant.DesiredLimitRange(tn, heldNS),
		tenant.DesiredNetworkPolicy(tn, heldNS, []string{heldNS}),
	} {
		g.Expect(apply(ac)).To(Succeed(), "%T", ac)
	}
	// The credentials: a ServiceAccount, an Opaque Secret, a token bound to it.
	g.Expect(e.operator.Apply(ctx, tenant.DesiredServiceAccount(tn), client.FieldOwner(platform.Name))).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: meta(heldNS, "ci-kubeconfig", tenantLabels(tenantName)), Type: corev1.SecretTypeOpaque}
	g.Expect(e.operator.Create(ctx, secret)).To(Succeed())
	request := tokenRequest(secret, 86400)
	g.Expect(e.operator.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta(heldNS, "ci", nil)}, request)).To(Succeed())
	g.Expect(request.Status.Token).NotTo(BeEmpty())
	filled := secret.DeepCopy()
	filled.Data = map[string][]byte{"token": []byte(request.Status.Token)}
	g.Expect(e.operator.Patch(ctx, filled, client.MergeFrom(secret))).To(Succeed())

	// Adopting a namespace labelled for the Tenant, and releasing one.
	legacy := &corev1.Namespace{}
	g.Expect(e.admin.Get(ctx, client.ObjectKey{Name: adoptNS}, legacy)).To(Succeed())
	adopted := legacy.DeepCopy()
	adopted.Labels = managed(map[string]string{tenantv1.TenantLabel: tenantName, tenantv1.TenantAdoptLabel: tenantName})
	g.Expect(e.operator.Patch(ctx, adopted, client.MergeFrom(legacy))).To(Succeed(), "adopted")
	released := adopted.DeepCopy()
	delete(released.Labels, tenantv1.TenantLabel)
	delete(released.Labels, platform.ManagedByLabel)
	g.Expect(e.operator.Patch(ctx, released, client.MergeFrom(adopted))).To(Succeed(), "released")

	// A Website's children, in a namespace of no Tenant.
	site := &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: plainNS, UID: "site-uid"},
		Spec: websitev1.WebsiteSpec{Image: "nginx:1.25", Port: 80, Ingress: &websitev1.WebsiteIngress{Host: "shop.example.com", Path: "/"}}}
	for _, ac := range []runtime.ApplyConfiguration{website.DesiredDeployment(site), website.DesiredService(site), website.DesiredIngress(site)} {
		g.Expect(apply(ac)).To(Succeed(), "%T", ac)
	}

	// A BackupJob's run (its Job and backup claim, or snapshot) and restore
	// drill (its claim from the backup).
	g.Expect(e.operator.Create(ctx, backupJob(plainNS), client.DryRunAll)).To(Succeed(), "a run's Job")
	g.Expect(e.operator.Create(ctx, backupClaim(plainNS, nil), client.DryRunAll)).To(Succeed(), "a backup claim")
	g.Expect(e.operator.Create(ctx, backupRecord(plainNS, nil), client.DryRunAll)).To(Succeed(), "the record of a backup in an object store")
	drill := backupClaim(plainNS, func(c *corev1.PersistentVolumeClaim) {
		c.Name = "nightly-1700000000-verify"
		c.Annotations = nil
		c.Labels = managed(map[string]string{tenantv1.BackupJobLabel: "nightly", "example.com/drill": "database"})
		c.OwnerReferences = backupJob(plainNS).OwnerReferences
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "database"}
	})
	g.Expect(e.operator.Create(ctx, drill, client.DryRunAll)).To(Succeed(), "a drill's claim")
	snapshot := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "nightly-1700000000", "namespace": plainNS,
			"labels":      map[string]any{platform.ManagedByLabel: platform.Name, tenantv1.BackupJobLabel: "nightly"},
			"annotations": map[string]any{"example.com/backupjob-uid": "bj-uid"}},
		"spec": map[string]any{"source": map[string]any{"persistentVolumeClaimName": "database"}},
	}}
	g.Expect(e.operator.Create(ctx, snapshot, client.DryRunAll)).To(Succeed(), "a snapshot")

	// A PostgresCluster's objects, in a namespace of no Tenant: the
	// instance managers' account, Role (of rights the operator holds) and
	// binding, the credentials, a pet and its claim, the first restored
	// from a backup.
	pg := postgresCluster()
	g.Expect(apply(postgrescluster.DesiredAccount(pg))).To(Succeed(), "the instance managers' account")
	// Made for real: binding a Role needs it to exist (RBAC compares its
	// rights with the operator's).
	g.Expect(e.operator.Apply(ctx, postgrescluster.DesiredRole(pg), client.FieldOwner(platform.Name))).To(Succeed(), "their Role")
	g.Expect(apply(postgrescluster.DesiredRoleBinding(pg))).To(Succeed(), "its binding")
	for _, secret := range postgrescluster.DesiredGeneratedSecrets(pg, "pa55word", "cluster.local", []byte("CA")) {
		g.Expect(e.operator.Create(ctx, secret, client.DryRunAll)).To(Succeed(), "its credentials: Secret %s", secret.Name)
	}
	certs, err := postgrescluster.DesiredTLSSecrets(pg, "cluster.local", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	for _, secret := range certs {
		g.Expect(e.operator.Create(ctx, secret, client.DryRunAll)).To(Succeed(), "its certificates: Secret %s", secret.Name)
	}
	pod := postgrescluster.DesiredPod(pg, 2, postgrescluster.PodOptions{InstanceImage: "example.com/platform-operator:v1", ClusterDomain: "cluster.local"})
	g.Expect(e.operator.Create(ctx, pod, client.DryRunAll)).To(Succeed(), "a pet, as its instance account")
	// The role label that routes CLUSTER-rw, on a pet the scheduler has
	// placed: the update writes no pod spec, though the spec names a node.
	g.Expect(e.operator.Apply(ctx, postgrescluster.DesiredAccount(pg), client.FieldOwner(platform.Name))).To(Succeed())
	placed := pod.DeepCopy()
	placed.Spec.NodeName = "node-1"
	g.Expect(e.admin.Create(ctx, placed)).To(Succeed())
	labelled := placed.DeepCopy()
	labelled.Labels[tenantv1.PostgresRoleLabel] = tenantv1.PostgresPrimaryRole
	g.Expect(e.operator.Patch(ctx, labelled, client.MergeFrom(placed))).To(Succeed(), "a role label on a placed pet")
	restored := postgrescluster.DesiredClaim(pg, 1)
	restored.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "nightly-1700000000"}
	g.Expect(e.operator.Create(ctx, restored, client.DryRunAll)).To(Succeed(), "its first claim, restored")
	g.Expect(e.operator.Create(ctx, postgrescluster.DesiredClaim(pg, 3), client.DryRunAll)).To(Succeed(), "another claim")
	g.Expect(apply(postgrescluster.DesiredLease(pg))).To(Succeed(), "the primary's Lease")
	g.Expect(e.operator.Create(ctx, postgrescluster.DesiredNetworkPolicy(pg), client.DryRunAll)).To(Succeed(), "its NetworkPolicy, outside a Tenant's namespace")
	for _, budget := range postgrescluster.DesiredBudgets(pg) {
		g.Expect(apply(budget)).To(Succeed(), "its disruption budget %s", *budget.Name)
	}
	// The replicas' budget, which a scale-down below three instances no
	// longer wants, is deleted.
	unwanted := &policyv1.PodDisruptionBudget{ObjectMeta: meta(plainNS, "db-replicas", managed(map[string]string{tenantv1.PostgresClusterLabel: "db"})),
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{tenantv1.PostgresClusterLabel: "db", tenantv1.PostgresRoleLabel: tenantv1.PostgresReplicaRole}}}}
	g.Expect(e.admin.Create(ctx, unwanted)).To(Succeed())
	g.Expect(e.operator.Delete(ctx, unwanted, client.DryRunAll)).To(Succeed(), "the deletion of a budget no longer wanted")
	// The Role of a cluster in its last instances' scale-down, and of one
	// whose application owner's Secret is the user's.
	leaving := postgresCluster()
	leaving.Spec.Instances = 1
	leaving.Status.CurrentPrimary = "db-3"
	g.Expect(apply(postgrescluster.DesiredRole(leaving))).To(Succeed(), "the Role while a scale-down hands the primary over")
	own := postgresCluster()
	own.Spec.Bootstrap = &tenantv1.PostgresBootstrap{InitDB: &tenantv1.PostgresInitDB{SecretName: "shop-db-owner"}}
	g.Expect(apply(postgrescluster.DesiredRole(own))).To(Succeed(), "the Role naming the user's Secret")

	// Leader election: client-go creates and renews an unlabelled Lease in
	// the operator's namespace, under the name of its flag.
	election := &coordinationv1.Lease{ObjectMeta: meta(platform.Namespace, platform.LeaseName, nil),
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("operator-1")}}
	g.Expect(e.operator.Create(ctx, election)).To(Succeed(), "the election Lease")
	election.Spec.HolderIdentity = ptr.To("operator-2")
	g.Expect(e.operator.Update(ctx, election)).To(Succeed(), "its renewal by another replica")
}

// postgresCluster is a PostgresCluster in plainNS, for its children.
func postgresCluster() *tenantv1.PostgresCluster {
	return &tenantv1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: plainNS, UID: "pg-uid"},
		Spec: tenantv1.PostgresClusterSpec{Instances: 3, Image: "postgres:15", Storage: tenantv1.PostgresStorage{Size: resource.MustParse("1Gi")}}}
}

func testStolenTokenIsConfined(t *testing.T, e *policyEnv) {
	secret := &corev1.Secret{}
	if err := e.admin.Get(t.Context(), client.ObjectKey{Namespace: "kube-system", Name: "bound"}, secret); err != nil {
		t.Fatal(err)
	}
	plainSecret := &corev1.Secret{}
	if err := e.admin.Get(t.Context(), client.ObjectKey{Namespace: plainNS, Name: "bound"}, plainSecret); err != nil {
		t.Fatal(err)
	}
	heldSecret := &corev1.Secret{}
	if err := e.admin.Get(t.Context(), client.ObjectKey{Namespace: heldNS, Name: "bound"}, heldSecret); err != nil {
		t.Fatal(err)
	}
	binding := func(ns, name, kind, role string, labels map[string]string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: meta(ns, name, labels),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}}}
	}
	withLabels := tenantLabels(tenantName)
	tests := []struct {
		name string
		// create makes the request as the operator.
		create func(ctx context.Context, c client.Client) error
		rule   string
	}{
		// A PostgresCluster's rights, used for anything else.
		{"a Role of another name", create(&rbacv1.Role{ObjectMeta: meta(plainNS, "reader", managed(map[string]string{"example.com/postgrescluster": "db"})),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}), "rule postgres-roles"},
		{"the instance Role bound to someone else", create(binding(plainNS, "db-instance", "Role", "db-instance", managed(map[string]string{"example.com/postgrescluster": "db"}))), "rule tenant-role-bindings"},
		{"a basic-auth Secret of another name", create(&corev1.Secret{ObjectMeta: meta(plainNS, "stolen", managed(map[string]string{"example.com/postgrescluster": "db"})),
			Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u", "password": "p"}}), "rule tenant-namespaces"},
		{"a pod as another cluster's instance account", create(func() *corev1.Pod {
			pod := postgrescluster.DesiredPod(postgresCluster(), 1, postgrescluster.PodOptions{InstanceImage: "x", ClusterDomain: "cluster.local"})
			pod.Spec.ServiceAccountName = "other-instance"
			return pod
		}()), "rule default-service-account"},
		{"a claim of a pet restored but the first", create(func() *corev1.PersistentVolumeClaim {
			c := postgrescluster.DesiredClaim(postgresCluster(), 2)
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "database"}
			return c
		}()), "rule claim-sources"},
		{"a NetworkPolicy named for no cluster", create(&networkingv1.NetworkPolicy{ObjectMeta: meta(plainNS, "db-open", managed(map[string]string{"example.com/postgrescluster": "db"}))}), "rule tenant-namespaces"},
		{"a Lease of another name", create(&coordinationv1.Lease{ObjectMeta: meta(plainNS, "db-leader", managed(map[string]string{"example.com/postgrescluster": "db"}))}), "rule leases"},
		{"the instance Role granting pod creation", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"},
			Verbs: []string{"create"}})), "rule postgres-roles"},
		{"the instance Role granting pod creation by name", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"},
			ResourceNames: []string{"app-1"}, Verbs: []string{"create"}})), "rule postgres-roles"},
		{"the instance Role granting bindings", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"},
			Verbs: []string{"create"}})), "rule postgres-roles"},
		{"the instance Role patching another pod", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"},
			ResourceNames: []string{"app-1", "other-1"}, Verbs: []string{"get", "patch"}})), "rule postgres-roles"},
		{"the instance Role reading every Secret", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			Verbs: []string{"get"}})), "rule postgres-roles"},
		{"the instance Role reading more Secrets", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{"app-app", "payroll", "bound"}, Verbs: []string{"get"}})), "rule postgres-roles"},
		{"the instance Role reading two more Secrets, one per rule", create(instanceRole(
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"payroll"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"bound"}, Verbs: []string{"get"}})), "rule postgres-roles"},
		{"the instance Role updating every Lease", create(instanceRole(rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "update"}})), "rule postgres-roles"},
		{"token of the instance account, the request labelled", tokenFor(plainNS, "db-instance", func() *authenticationv1.TokenRequest {
			r := tokenRequest(plainSecret, 3600)
			r.Labels = managed(map[string]string{tenantv1.PostgresClusterLabel: "db"})
			return r
		}()), "rule tenant-namespaces"},
		{"a budget that blocks every drain of an application", create(&policyv1.PodDisruptionBudget{ObjectMeta: meta(plainNS, "web", managed(nil)),
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}), "rule postgres-disruption-budgets"},
		{"a cluster's budget selecting an application", create(&policyv1.PodDisruptionBudget{
			ObjectMeta: meta(plainNS, "db-primary", managed(map[string]string{tenantv1.PostgresClusterLabel: "db"})),
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}), "rule postgres-disruption-budgets"},

		// Leases: node heartbeats and other components' elections.
		{"kube-controller-manager's election", create(&coordinationv1.Lease{ObjectMeta: meta("kube-system", "kube-controller-manager", managed(nil))}), "rule leases"},
		{"an application's election", create(&coordinationv1.Lease{ObjectMeta: meta(plainNS, "app-leader", nil)}), "rule managed-by-label"},
		{"a labelled Lease of no PostgresCluster", create(&coordinationv1.Lease{ObjectMeta: meta(plainNS, "app-leader", managed(nil))}), "rule leases"},

		// Tokens: the stolen-token path of the review.
		{"token of kube-system's admin", tokenFor("kube-system", "admin", tokenRequest(secret, 3600)), "rule no-system-namespaces"},
		{"token in a namespace of no Tenant", tokenFor(plainNS, "deployer", tokenRequest(plainSecret, 3600)), "rule tenant-namespaces"},
		{"token of default", tokenFor(heldNS, "default", tokenRequest(heldSecret, 3600)), "rule token-requests"},
		{"unbound token", tokenFor(heldNS, "robot", tokenRequest(nil, 3600)), "rule token-requests"},
		{"token for a year", tokenFor(heldNS, "robot", tokenRequest(heldSecret, 365*24*3600)), "rule token-requests"},

		// RoleBindings.
		{"admin in kube-system", create(binding("kube-system", "tenant-admin", "ClusterRole", "admin", withLabels)), "rule no-system-namespaces"},
		{"admin in a namespace of no Tenant", create(binding(plainNS, "tenant-admin", "ClusterRole", "admin", withLabels)), "rule tenant-namespaces"},
		{"admin in another Tenant's namespace", create(binding(otherNS, "tenant-admin", "ClusterRole", "admin", withLabels)), "rule tenant-namespaces"},
		{"a Role of the operator's own rights", create(binding(heldNS, "tenant-reader", "Role", "reader", withLabels)), "rule tenant-role-bindings"},
		{"a binding of another name", create(binding(heldNS, "mallory", "ClusterRole", "admin", withLabels)), "rule tenant-role-bindings"},

		// Secrets and ServiceAccounts.
		{"service-account-token Secret", create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: heldNS, Name: "steal", Labels: withLabels,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "ci"}}, Type: corev1.SecretTypeServiceAccountToken}), "rule opaque-secrets"},
		{"Secret in kube-system", create(&corev1.Secret{ObjectMeta: meta("kube-system", "x", withLabels)}), "rule no-system-namespaces"},
		{"Secret in a namespace of no Tenant", create(&corev1.Secret{ObjectMeta: meta(plainNS, "x", withLabels)}), "rule tenant-namespaces"},
		{"ServiceAccount in a namespace of no Tenant", create(&corev1.ServiceAccount{ObjectMeta: meta(plainNS, "x", withLabels)}), "rule tenant-namespaces"},
		{"ServiceAccount without its Tenant's label", create(&corev1.ServiceAccount{ObjectMeta: meta(heldNS, "x", managed(nil))}), "rule tenant-namespaces"},

		// Namespaces.
		{"namespace kube-evil", create(&corev1.Namespace{ObjectMeta: meta("", "kube-evil", withLabels)}), "rule no-system-namespaces"},
		{"namespace of no Tenant", create(&corev1.Namespace{ObjectMeta: meta("", "mine", managed(nil))}), "rule namespaces-for-tenants"},

		// Jobs and claims.
		{"Job of no BackupJob", create(backupJob(plainNS, func(j *batchv1.Job) { j.OwnerReferences = nil })), "rule backup-objects"},
		{"Job of another BackupJob", create(backupJob(plainNS, func(j *batchv1.Job) { j.OwnerReferences[0].Name = "other" })), "rule backup-objects"},
		{"Job in kube-system", create(backupJob("kube-system")), "rule no-system-namespaces"},
		{"claim of no BackupJob", create(backupClaim(plainNS, func(c *corev1.PersistentVolumeClaim) { c.Annotations = nil })), "rule backup-objects"},
		{"ConfigMap of no BackupJob", create(backupRecord(plainNS, func(c *corev1.ConfigMap) { delete(c.Labels, tenantv1.BackupJobLabel) })), "rule backup-objects"},
		{"backup record that no BackupJob made", create(backupRecord(plainNS, func(c *corev1.ConfigMap) { c.Annotations = nil })), "rule backup-objects"},
		{"ConfigMap in kube-system", create(backupRecord("kube-system", nil)), "rule no-system-namespaces"},
		{"an application's ConfigMap", create(&corev1.ConfigMap{ObjectMeta: meta(plainNS, "settings", nil)}), "rule managed-by-label"},
		{"copy of another claim", create(backupClaim(plainNS, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "database"}
		})), "rule claim-sources"},

		// Services.
		{"NodePort Service", create(&corev1.Service{ObjectMeta: meta(plainNS, "x", managed(nil)),
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}), "rule cluster-ip-services"},
		{"Service with externalIPs", create(&corev1.Service{ObjectMeta: meta(plainNS, "x", managed(nil)),
			Spec: corev1.ServiceSpec{ExternalIPs: []string{"10.0.0.1"}, Ports: []corev1.ServicePort{{Port: 80}}}}), "rule cluster-ip-services"},

		// Pods that reach their node.
		{"capability", create(backupJob(plainNS, withContainer(func(c *corev1.Container) {
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}))), "rule no-capabilities"},
		{"host port", create(backupJob(plainNS, withContainer(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 22, HostPort: 22}}
		}))), "rule no-host-ports"},
		{"seccomp Unconfined", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}))), "rule confined"},
		{"AppArmor annotation", create(backupJob(plainNS, func(j *batchv1.Job) {
			j.Spec.Template.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/copy": "unconfined"}
		})), "rule confined"},
		{"procMount Unmasked", create(backupJob(plainNS, withContainer(func(c *corev1.Container) {
			c.SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}), withPod(func(p *corev1.PodSpec) { p.HostUsers = ptr.To(false) }))), "rule confined"},
		{"SELinux spc_t", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}))), "rule confined"},
		{"unsafe sysctl", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.core_pattern", Value: "|/tmp/x"}}
		}))), "rule safe-sysctls"},
		{"probe of another host", create(backupJob(plainNS, withContainer(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Port: intstr.FromInt32(80)}}}
		}))), "rule no-host-probes"},
		{"nfs volume", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}}})
		}))), "rule volume-types"},
		{"inline CSI volume", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x"}}})
		}))), "rule volume-types"},
		{"nodeName", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) { p.NodeName = "control-plane-1" }))), "rule placement"},
		{"control-plane toleration", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}
		}))), "rule placement"},
		{"every taint tolerated", create(backupJob(plainNS, withPod(func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}))), "rule placement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectForbidden(t, tt.create(t.Context(), e.operator), tt.name, "platform-operator-guardrails", tt.rule)
		})
	}
}

// instanceRole is the Role the operator makes for the instance managers
// of a PostgresCluster app in plainNS (which has none yet), with rule
// added.
func instanceRole(rules ...rbacv1.PolicyRule) *rbacv1.Role {
	pg := postgresCluster()
	pg.Name = "app"
	data, err := json.Marshal(postgrescluster.DesiredRole(pg))
	if err != nil {
		panic(err)
	}
	role := &rbacv1.Role{}
	if err := json.Unmarshal(data, role); err != nil {
		panic(err)
	}
	role.Rules = append(role.Rules, rules...)
	return role
}

// create dry-runs the creation of obj.
func create(obj client.Object) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.Create(ctx, obj, client.DryRunAll)
	}
}

// tokenFor requests a token of the ServiceAccount ns/name.
func tokenFor(ns, name string, request *authenticationv1.TokenRequest) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta(ns, name, nil)}, request)
	}
}
